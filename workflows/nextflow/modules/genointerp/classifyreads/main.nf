process GENOINTERP_CLASSIFYREADS {
    tag "$meta.id"
    label 'process_medium'

    // Built from the repository's Dockerfile; Nextflow prefixes docker:// for Singularity/Apptainer.
    container 'genointerp:0.1.0'

    input:
    // meta.chunk / meta.chunks (1-based chunk of N) scatter one read file over N tasks;
    // GENOINTERP_MERGECALLS gathers them. Without them the whole file is classified.
    tuple val(meta), path(reads)
    // a train-xvir model directory, or [ [:], [] ] for the built-in HPV model
    tuple val(meta2), path(model)

    output:
    tuple val(meta), path("*.calls.tsv")   , emit: calls
    tuple val(meta), path("*.summary.json"), emit: summary
    tuple val(meta), path("*.viral.*.gz")  , emit: viral
    path "versions.yml"                    , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: (meta.chunks ? "${meta.id}.${meta.chunk}-of-${meta.chunks}" : "${meta.id}")
    def chunk  = meta.chunks ? "--chunk ${meta.chunk}/${meta.chunks}" : ''
    def model_arg = model ? "--model ${model}" : ''
    def device = task.accelerator ? 'cuda' : 'cpu'
    // --viral-out writes FASTA for FASTA input, FASTQ otherwise
    def viral_ext = (reads instanceof List ? reads[0] : reads).name =~ /\.(fa|fasta|fna)(\.gz)?$/ ? 'fa' : 'fq'
    """
    genointerp classify-reads \\
        ${reads} \\
        ${model_arg} \\
        ${chunk} \\
        --device ${device} \\
        --threads $task.cpus \\
        ${args} \\
        -o ${prefix}.calls.tsv \\
        --summary ${prefix}.summary.json \\
        --viral-out ${prefix}.viral.${viral_ext}.gz

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """

    stub:
    def prefix = task.ext.prefix ?: (meta.chunks ? "${meta.id}.${meta.chunk}-of-${meta.chunks}" : "${meta.id}")
    """
    printf 'read_id\\tlength\\tp_viral\\tcall\\tstatus\\tkmer_hits\\tevidence\\tbits\\treference\\n' > ${prefix}.calls.tsv
    echo '{}' > ${prefix}.summary.json
    echo -n | gzip > ${prefix}.viral.fq.gz

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """
}
