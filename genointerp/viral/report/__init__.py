"""The per-sample viral report, built from reads already typed (genointerp.viral.typing): the
sample's typing as data (what merge-calls joins), the host's bases behind copies per genome, the
report's rows."""
