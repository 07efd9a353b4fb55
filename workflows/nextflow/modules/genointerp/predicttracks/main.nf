process GENOINTERP_PREDICTTRACKS {
    tag "$meta.id"
    label 'process_medium'

    container 'genointerp:0.1.0'

    input:
    // BED of regions to predict; [] to predict whole chromosomes given by ext.args '--chroms ...'
    tuple val(meta), path(regions)
    // reference FASTA (plain or bgzip) with its .fai (and .gzi) index
    tuple val(meta2), path(fasta), path(fasta_index)
    // a train-tracks model directory, or [ [:], [] ] for the built-in hg19 chr20 model
    tuple val(meta3), path(model)

    output:
    tuple val(meta), path("*.predictions/*.bw")       , emit: bigwig
    tuple val(meta), path("*.predictions/*.peaks.bed"), emit: peaks
    path "versions.yml"                               , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def model_arg   = model ? "--model ${model}" : ''
    def regions_arg = regions ? "--regions ${regions}" : ''
    def device = task.accelerator ? 'cuda' : 'cpu'
    """
    genointerp predict-tracks \\
        ${model_arg} \\
        --reference ${fasta} \\
        ${regions_arg} \\
        --device ${device} \\
        --threads $task.cpus \\
        ${args} \\
        -o ${prefix}.predictions

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    mkdir ${prefix}.predictions
    touch ${prefix}.predictions/stub.bw ${prefix}.predictions/stub.peaks.bed

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """
}
