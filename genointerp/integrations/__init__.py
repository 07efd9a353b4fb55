"""The find-integrations job (job.py): host-virus junctions from a host-aligned BAM/CRAM or paired FASTQ."""
