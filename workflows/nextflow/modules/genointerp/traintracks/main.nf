process GENOINTERP_TRAINTRACKS {
    tag "$meta.id"
    label 'process_high'

    container 'genointerp:0.1.0'

    input:
    // the tracks TSV (id, path, group, description, name) and the track files it names,
    // which must be given in it as paths relative to the TSV (they are staged beside it)
    tuple val(meta), path(targets), path(track_files)
    // reference FASTA (plain or bgzip) with its .fai (and .gzi) index
    tuple val(meta2), path(fasta), path(fasta_index)

    output:
    tuple val(meta), path("*.tracks", type: 'dir')     , emit: model
    tuple val(meta), path("*.tracks/metrics.tsv")      , emit: metrics
    tuple val(meta), path("*.tracks/test_pearson.tsv") , emit: test_pearson
    path "versions.yml"                                , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? 'cuda' : 'cpu'
    """
    genointerp train-tracks \\
        --reference ${fasta} \\
        --targets ${targets} \\
        --device ${device} \\
        --threads $task.cpus \\
        ${args} \\
        -o ${prefix}.tracks

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    mkdir ${prefix}.tracks
    touch ${prefix}.tracks/model.safetensors ${prefix}.tracks/config.json
    touch ${prefix}.tracks/metrics.tsv ${prefix}.tracks/test_pearson.tsv

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """
}
