"""The find-integrations job: host-virus junctions from a host-aligned BAM/CRAM or paired FASTQ.

job.py runs it (its docstring tells the method) on request.py's options: the input is scanned by
bam.py or fastq.py for pieces of reads that pieces.py places on the viral panel, clusters.py makes
the evidence junction calls, genes.py names the host genes beside them."""
