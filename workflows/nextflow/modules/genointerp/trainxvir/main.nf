process GENOINTERP_TRAINXVIR {
    tag "$meta.id"
    label 'process_high'

    container 'genointerp:0.1.0'

    input:
    // kmerize dataset folder(s), or labelled FASTQ/FASTA (simulate-reads names: labels from field 0)
    tuple val(meta), path(dataset)

    output:
    tuple val(meta), path("*.xvir", type: 'dir')     , emit: model
    tuple val(meta), path("*.xvir/metrics.tsv")      , emit: metrics
    tuple val(meta), path("*.xvir/test_metrics.json"), emit: test_metrics
    path "versions.yml"                              , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def device = task.accelerator ? 'cuda' : 'cpu'
    """
    genointerp train-xvir \\
        ${dataset} \\
        --device ${device} \\
        --threads $task.cpus \\
        ${args} \\
        -o ${prefix}.xvir

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    mkdir ${prefix}.xvir
    touch ${prefix}.xvir/model.safetensors ${prefix}.xvir/config.json ${prefix}.xvir/metrics.tsv
    echo '{}' > ${prefix}.xvir/test_metrics.json

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """
}
