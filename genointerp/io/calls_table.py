"""classify-reads' outputs that merge-calls reads back: the per-read calls TSV's header and the
summary JSON's layout (kept below both commands so that neither imports the other)."""

from __future__ import annotations

import json

# New columns go last, so pipelines that cut fields 1-5 keep working
HEADER = "read_id\tlength\tp_viral\tcall\tstatus\tkmer_hits\tevidence\tbits\treference\n"


def summary_json(summary: dict) -> str:
    """A classify-reads (or merged) summary as its JSON file holds it."""
    return json.dumps(summary, indent=2) + "\n"
