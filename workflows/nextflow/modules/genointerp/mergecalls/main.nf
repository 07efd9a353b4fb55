process GENOINTERP_MERGECALLS {
    tag "$meta.id"
    label 'process_single'

    container 'genointerp:0.1.0'

    input:
    // the outputs of GENOINTERP_CLASSIFYREADS for every chunk of one sample, grouped by sample
    // (e.g. groupTuple on meta.id after dropping chunk/chunks from meta); any order: merge-calls
    // puts the chunks in order from their summaries and refuses missing or duplicated chunks
    tuple val(meta), path(calls, stageAs: 'chunks/calls/*'), path(summaries, stageAs: 'chunks/summaries/*'), path(viral, stageAs: 'chunks/viral/*')

    output:
    tuple val(meta), path("*.calls.tsv")   , emit: calls
    tuple val(meta), path("*.summary.json"), emit: summary
    tuple val(meta), path("*.viral.*.gz")  , emit: viral
    path "versions.yml"                    , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def first  = viral instanceof List ? viral[0] : viral
    def viral_ext = first.name =~ /\.fa\.gz$/ ? 'fa' : 'fq'
    """
    genointerp merge-calls \\
        ${calls} \\
        ${summaries} \\
        ${viral} \\
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
    def prefix = task.ext.prefix ?: "${meta.id}"
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
