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
    tuple val(meta), path("*.calls.tsv")                , emit: calls
    tuple val(meta), path("*.summary.json")             , emit: summary
    tuple val(meta), path("*.viral.*.gz")               , emit: viral
    // the per-sample viral report, from the typing each chunk summary holds (none with ext.report = false)
    tuple val(meta), path("*.viral_report.tsv")         , emit: report       , optional: true
    tuple val(meta), path("*.genointerp.kreport")       , emit: kraken_report, optional: true
    tuple val(meta), path("*.genointerp_mqc.tsv")       , emit: multiqc      , optional: true
    tuple val(meta), path("*.genointerp_types_mqc.tsv") , emit: multiqc_types, optional: true
    path "versions.yml"                                 , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def first  = viral instanceof List ? viral[0] : viral
    def viral_ext = first.name =~ /\.fa\.gz$/ ? 'fa' : 'fq'
    // the report of the whole sample (with the chunk jobs' sample name, host genome size and bases),
    // byte for byte an unchunked classify-reads run's; *.genointerp.kreport is the name
    // genointerp/resources/multiqc_config.yaml keeps out of MultiQC's kraken module
    def report_args = task.ext.report != false ? "--report ${prefix}.viral_report.tsv --kraken-report ${prefix}.genointerp.kreport --multiqc ${prefix}.genointerp_mqc.tsv --multiqc-types ${prefix}.genointerp_types_mqc.tsv" : ''
    """
    genointerp merge-calls \\
        ${calls} \\
        ${summaries} \\
        ${viral} \\
        ${args} \\
        -o ${prefix}.calls.tsv \\
        --summary ${prefix}.summary.json \\
        --viral-out ${prefix}.viral.${viral_ext}.gz \\
        ${report_args}

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    def report = task.ext.report != false
    """
    printf 'read_id\\tlength\\tp_viral\\tcall\\tstatus\\tkmer_hits\\tevidence\\tbits\\treference\\n' > ${prefix}.calls.tsv
    echo '{}' > ${prefix}.summary.json
    echo -n | gzip > ${prefix}.viral.fq.gz
    if [ "${report}" = true ]; then
        printf 'sample\\tvirus\\ttype\\treads\\tunique_reads\\tgenome_fraction\\tmean_depth\\tcopies_per_genome\\tstatus\\tshared_with\\treference\\thost_depth\\tflags\\n' > ${prefix}.viral_report.tsv
        touch ${prefix}.genointerp.kreport
        printf '# id: genointerp_viral\\n# plot_type: generalstats\\nSample\\tviral_reads\\ttop_type\\tcopies_per_genome\\thost_depth\\n%s\\t0\\tnone\\tNA\\t0.000000\\n' "${meta.id}" > ${prefix}.genointerp_mqc.tsv
        printf '# id: genointerp_viral_types\\n# plot_type: table\\nRow\\tsample\\tvirus\\ttype\\treads\\tunique_reads\\tgenome_fraction\\tcopies_per_genome\\tstatus\\tflags\\n%s: none\\t%s\\tnone\\tnone\\t0.00\\t0\\tNA\\tNA\\tnot_detected\\t.\\n' "${meta.id}" "${meta.id}" > ${prefix}.genointerp_types_mqc.tsv
    fi

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """
}
