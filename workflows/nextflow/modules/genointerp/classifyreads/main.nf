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
    tuple val(meta), path("*.calls.tsv")                , emit: calls
    tuple val(meta), path("*.summary.json")             , emit: summary
    tuple val(meta), path("*.viral.*.gz")               , emit: viral
    // the per-sample viral report: unchunked tasks only (a chunk's summary carries its typing
    // instead, and GENOINTERP_MERGECALLS writes the report); none with ext.report = false
    tuple val(meta), path("*.viral_report.tsv")         , emit: report       , optional: true
    tuple val(meta), path("*.genointerp.kreport")       , emit: kraken_report, optional: true
    tuple val(meta), path("*.genointerp_mqc.tsv")       , emit: multiqc      , optional: true
    tuple val(meta), path("*.genointerp_types_mqc.tsv") , emit: multiqc_types, optional: true
    path "versions.yml"                                 , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: (meta.chunks ? "${meta.id}.${meta.chunk}-of-${meta.chunks}" : "${meta.id}")
    def chunk  = meta.chunks ? "--chunk ${meta.chunk}/${meta.chunks}" : ''
    def model_arg = model ? "--model ${model}" : ''
    def device = task.accelerator ? 'cuda' : 'cpu'
    // the report needs every read of the sample: unchunked only (kraken-style report named
    // *.genointerp.kreport, which genointerp/resources/multiqc_config.yaml keeps out of MultiQC's
    // kraken module; the MultiQC files must end in _mqc.tsv)
    def report = !meta.chunks && task.ext.report != false
    def report_args = report ? "--report ${prefix}.viral_report.tsv --kraken-report ${prefix}.genointerp.kreport --multiqc ${prefix}.genointerp_mqc.tsv --multiqc-types ${prefix}.genointerp_types_mqc.tsv" : ''
    // --viral-out writes FASTA for FASTA input, FASTQ otherwise
    def viral_ext = (reads instanceof List ? reads[0] : reads).name =~ /\.(fa|fasta|fna)(\.gz)?$/ ? 'fa' : 'fq'
    """
    genointerp classify-reads \\
        ${reads} \\
        ${model_arg} \\
        ${chunk} \\
        --sample ${meta.id} \\
        --device ${device} \\
        --threads $task.cpus \\
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
    def prefix = task.ext.prefix ?: (meta.chunks ? "${meta.id}.${meta.chunk}-of-${meta.chunks}" : "${meta.id}")
    def report = !meta.chunks && task.ext.report != false
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
