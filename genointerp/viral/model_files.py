"""A viral model folder's file names and config.json keys, named here once for every module that
reads or writes them.

A train-xvir folder is a model folder (genointerp.model_folder: WEIGHTS and CONFIG, named there for
every kind of model) that may also carry its viral evidence:
- REFS_FILE: the viral references the model was trained on; both indexes are built from them
  (genointerp.viral.evidence), and typing and find-integrations place reads on them;
- KMER_EXCLUDED_FILE, PROTEIN_EXCLUDED_FILE: the indexes' seeds the negative references also hold;
- DESCRIPTIONS_FILE (optional): descriptions of references whose FASTA headers carry names only;
- TAXIDS_FILE (optional): the types' NCBI taxids, for the Kraken-style report;
- INDEX_DIR: the indexes prebuilt, arrays beside their MANIFEST (genointerp.viral.evidence.prebuilt),
  and minimap2's index of the references (genointerp.viral.typing.placement.PANEL_INDEX);
- FOLDED_FILE: the model's folded inference tables, so that it runs without torch
  (genointerp.viral.folded_model).
config.json's KMER_KEY and PROTEIN_KEY entries say how the indexes are built, and the RULE_KEY entry of
its "calling" section holds the calling rule (genointerp.viral.classify.calling).
"""

from genointerp.model_folder import CONFIG, WEIGHTS

__all__ = ["CONFIG", "WEIGHTS", "REFS_FILE", "KMER_EXCLUDED_FILE", "PROTEIN_EXCLUDED_FILE", "DESCRIPTIONS_FILE",
           "TAXIDS_FILE", "INDEX_DIR", "FOLDED_FILE", "MANIFEST", "KMER_KEY", "PROTEIN_KEY", "RULE_KEY"]

REFS_FILE = "kmer_refs.fa.gz"
KMER_EXCLUDED_FILE = "kmer_excluded.txt.gz"
PROTEIN_EXCLUDED_FILE = "protein_excluded.txt.gz"
DESCRIPTIONS_FILE = "ref_descriptions.tsv"  # name <TAB> description (the genotype of HBV_3 ...), one a line
TAXIDS_FILE = "taxids.tsv"
INDEX_DIR = "index"  # the prebuilt indexes
FOLDED_FILE = "xvir_folded.safetensors"  # beside WEIGHTS, folded from them
MANIFEST = "manifest.json"  # in INDEX_DIR (and in each cached index)
KMER_KEY = "kmer_index"
PROTEIN_KEY = "protein_index"
RULE_KEY = "score_rule"  # in config.json "calling"
