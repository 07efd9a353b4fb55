"""The per-sample viral report: the reads' types tallied by classify-reads, the sample's typing as
data (what merge-calls joins), the host's bases behind copies per genome, the report's rows."""
