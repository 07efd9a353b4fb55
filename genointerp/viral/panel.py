"""What the code knows about the viruses, in one module for every command that reports one: their
names (a reference's name -> virus, type and display name), which genomes are circular, each
virus's NCBI taxon, and the two tables a model folder may add about its references (descriptions,
which carry HBV's genotypes; the types' NCBI taxids).

Reference collections name their genomes in a few ways: `HPV16` and its lineage genomes `HPV16_v2`
(PaVE-derived HPV collections), `HPV-mSK010` (types named by their isolate), `HBV_3`,
`KSHV_HHV-8_1`, `EBV_HHV-4_1`, `HTLV-1_1`, `MCPyV_1` (a serial number after the virus; the
description may say `genotype_B`). `name_reference(name, description)` turns any of them into
(virus, type, display): HPV16_v2 -> ("HPV", "HPV16", "HPV16"), HBV_3 + "D00330.1 genotype_B" ->
("HBV", "HBV", "HBV genotype B"). A name it does not know keeps its own name as virus and type
(less a trailing `_N` serial). `circular` says whether the virus's genome is circular (HPV, HBV,
polyomaviruses, herpesvirus episomes), which aligners and simulators need to know. VIRUS_TAXA and
`type_taxids` give the kraken-style report its taxa; `with_descriptions` fills in descriptions from
the folder's DESCRIPTIONS_FILE for references whose FASTA headers carry names only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from genointerp.viral.model_files import TAXIDS_FILE

# name prefix (case-insensitive) -> virus; the longer prefixes are tried first
_VIRUSES = {
    "HPV": "HPV", "HBV": "HBV", "HCV": "HCV", "EBV": "EBV", "HHV-4": "EBV", "HHV4": "EBV",
    "KSHV": "KSHV", "HHV-8": "KSHV", "HHV8": "KSHV", "HTLV-1": "HTLV-1", "HTLV1": "HTLV-1",
    "HTLV": "HTLV", "MCPYV": "MCPyV", "MCV": "MCPyV", "HIV-1": "HIV-1", "HIV": "HIV",
}
# the prefixes, longest first, as name_reference tries them (sorted once: 562 references' names,
# each sorted anew, took 5 ms of typing's start in every process that types a read)
_PREFIXES = sorted(_VIRUSES.items(), key=lambda kv: -len(kv[0]))
_CIRCULAR = {"HPV", "HBV", "MCPyV", "EBV", "KSHV"}
# each virus's NCBI taxon (the kraken-style report's); HPV types' taxids from the model folder's
# TAXIDS_FILE (type_taxids)
VIRUS_TAXA = {"HPV": (10566, "Human papillomavirus"), "HBV": (10407, "Hepatitis B virus"),
              "HCV": (11103, "Hepatitis C virus"), "EBV": (10376, "Human gammaherpesvirus 4"),
              "KSHV": (37296, "Human gammaherpesvirus 8"), "HTLV-1": (11908, "Human T-lymphotropic virus 1"),
              "MCPyV": (493803, "Merkel cell polyomavirus"), "HIV-1": (11676, "Human immunodeficiency virus 1")}
_LINEAGE = re.compile(r"_v\d+$")  # HPV16_v2: a lineage genome of HPV16
_SERIAL = re.compile(r"_\d+$")  # HBV_3, EBV_HHV-4_1: a collection's serial number
_GENOTYPE = re.compile(r"genotype[ _]([A-J])\b", re.IGNORECASE)


@dataclass(frozen=True)
class ViralName:
    virus: str  # HPV, HBV, ... (or the reference's own stem when unknown)
    type: str  # HPV16, HPV-mSK010, HBV, ...
    display: str  # what a report shows: the type, with a genotype where the description names one
    circular: bool


def name_reference(name: str, description: str = "") -> ViralName:
    """Virus, type and display name of a viral reference from its FASTA name and description."""
    stem = _LINEAGE.sub("", name)
    stem = _SERIAL.sub("", stem)
    upper = stem.upper()
    virus = next((v for p, v in _PREFIXES if upper.startswith(p)), None)
    if virus == "HPV":
        vtype = stem  # HPV16, HPV-mSK010: the type is the name less its lineage suffix
    elif virus is not None:
        vtype = virus  # KSHV_HHV-8 -> KSHV; genotypes go to the display name
    else:
        virus = vtype = stem
    display = vtype
    genotype = _GENOTYPE.search(description or "")
    if genotype and virus != "HPV":
        display = f"{vtype} genotype {genotype.group(1).upper()}"
    return ViralName(virus, vtype, display, virus in _CIRCULAR)


def known_virus(name: str) -> bool:
    """Whether a contig name (e.g. of a host+virus reference: HPV16, chrEBV, HBV_1) names a virus
    this module knows, so that its reads are not taken for host reads."""
    stem = name[3:] if name.lower().startswith("chr") else name
    upper = _SERIAL.sub("", _LINEAGE.sub("", stem)).upper()
    return any(upper.startswith(p) for p in _VIRUSES)


def with_descriptions(records: list[tuple[str, str, str]], table: Path) -> list[tuple[str, str, str]]:
    """Records with the descriptions of `table` (DESCRIPTIONS_FILE) where their headers have none."""
    if not table.exists():
        return records
    described = {}
    for line in table.read_text().splitlines():
        name, _, description = line.partition("\t")
        if name and not line.startswith("#"):
            described[name] = description
    return [(n, d or described.get(n, ""), s) for n, d, s in records]


def type_taxids(model_dir: str) -> dict[str, int]:
    """The NCBI taxid of each type a model folder's TAXIDS_FILE names (type <TAB> taxid, one a line;
    {} where the folder has none)."""
    path = Path(model_dir) / TAXIDS_FILE
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and not line.startswith("#"):
            out[parts[0]] = int(parts[1])
    return out
