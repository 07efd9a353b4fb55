"""Viral reference names -> virus, type and display name, for every command that reports a virus.

Reference collections name their genomes in a few ways: `HPV16` and its lineage genomes `HPV16_v2`
(PaVE-derived HPV collections), `HPV-mSK010` (types named by their isolate), `HBV_3`,
`KSHV_HHV-8_1`, `EBV_HHV-4_1`, `HTLV-1_1`, `MCPyV_1` (a serial number after the virus; the
description may say `genotype_B`). `name_reference(name, description)` turns any of them into
(virus, type, display): HPV16_v2 -> ("HPV", "HPV16", "HPV16"), HBV_3 + "D00330.1 genotype_B" ->
("HBV", "HBV", "HBV genotype B"). A name it does not know keeps its own name as virus and type
(less a trailing `_N` serial). `circular` says whether the virus's genome is circular (HPV, HBV,
polyomaviruses, herpesvirus episomes), which aligners and simulators need to know.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# name prefix (case-insensitive) -> virus; the longer prefixes are tried first
_VIRUSES = {
    "HPV": "HPV", "HBV": "HBV", "HCV": "HCV", "EBV": "EBV", "HHV-4": "EBV", "HHV4": "EBV",
    "KSHV": "KSHV", "HHV-8": "KSHV", "HHV8": "KSHV", "HTLV-1": "HTLV-1", "HTLV1": "HTLV-1",
    "HTLV": "HTLV", "MCPYV": "MCPyV", "MCV": "MCPyV", "HIV-1": "HIV-1", "HIV": "HIV",
}
_CIRCULAR = {"HPV", "HBV", "MCPyV", "EBV", "KSHV"}
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
    virus = next((v for p, v in sorted(_VIRUSES.items(), key=lambda kv: -len(kv[0])) if upper.startswith(p)), None)
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
