process GENOINTERP_FINDINTEGRATIONS {
    tag "$meta.id"
    label 'process_medium'

    // Built from the repository's Dockerfile; Nextflow prefixes docker:// for Singularity/Apptainer.
    container 'genointerp:0.1.0'

    input:
    // a coordinate-sorted host-aligned BAM/CRAM with its unmapped reads, and its index
    tuple val(meta), path(bam), path(bai)
    // the indexed host FASTA the BAM was aligned to (.fai, and .gzi when bgzipped)
    tuple val(meta2), path(fasta), path(fai)
    // more viral genomes (FASTA), or [] for the built-in references alone (HPV, HBV, HCV, EBV,
    // KSHV, HTLV-1, MCPyV)
    path(viral_refs)
    // a gene BED/GTF for the nearest_genes column, or []
    path(genes)

    output:
    tuple val(meta), path("*.integrations.tsv")   , emit: tsv
    tuple val(meta), path("*.integrations.vcf")   , emit: vcf
    tuple val(meta), path("*.integrations.bedpe") , emit: bedpe
    tuple val(meta), path("*.integrations.json")  , emit: summary
    // the sample's rows of the genointerp integrations table in MultiQC (custom content)
    tuple val(meta), path("*.genointerp_integrations_mqc.tsv"), emit: multiqc
    path "versions.yml"                           , emit: versions

    when:
    task.ext.when == null || task.ext.when

    script:
    def args   = task.ext.args ?: ''
    def prefix = task.ext.prefix ?: "${meta.id}"
    def refs_arg  = viral_refs ? (viral_refs instanceof List ? viral_refs : [viral_refs]).collect { "--viral-refs ${it}" }.join(' ') : ''
    def genes_arg = genes ? "--genes ${genes}" : ''
    """
    genointerp find-integrations \\
        ${bam} \\
        --reference ${fasta} \\
        ${refs_arg} \\
        ${genes_arg} \\
        --threads $task.cpus \\
        ${args} \\
        -o ${prefix}.integrations.tsv \\
        --vcf ${prefix}.integrations.vcf \\
        --bedpe ${prefix}.integrations.bedpe \\
        --summary ${prefix}.integrations.json \\
        --multiqc ${prefix}.genointerp_integrations_mqc.tsv \\
        --sample ${meta.id}

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """

    stub:
    def prefix = task.ext.prefix ?: "${meta.id}"
    """
    printf 'junction_id\\thost_chrom\\thost_pos\\thost_strand\\tvirus\\ttype\\tviral_contig\\tviral_pos\\torientation\\tsplit_reads\\tspanning_pairs\\tkmer_hits\\tnearest_genes\\tstatus\\n' > ${prefix}.integrations.tsv
    printf '##fileformat=VCFv4.3\\n#CHROM\\tPOS\\tID\\tREF\\tALT\\tQUAL\\tFILTER\\tINFO\\n' > ${prefix}.integrations.vcf
    printf '#chrom1\\tstart1\\tend1\\tchrom2\\tstart2\\tend2\\tname\\tscore\\tstrand1\\tstrand2\\tvirus\\ttype\\tsplit_reads\\tspanning_pairs\\tstatus\\n' > ${prefix}.integrations.bedpe
    echo '{"junctions": 0}' > ${prefix}.integrations.json
    printf '# id: genointerp_integrations\\n# plot_type: table\\nRow\\tsample\\tvirus\\ttype\\thost_position\\tsplit_reads\\tspanning_pairs\\tnearest_genes\\tstatus\\n%s: none\\t%s\\tnone\\tnone\\tNA\\t0\\t0\\t.\\tnone\\n' "${meta.id}" "${meta.id}" > ${prefix}.genointerp_integrations_mqc.tsv

    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        genointerp: \$(genointerp --version | sed 's/^genointerp //')
    END_VERSIONS
    """
}
