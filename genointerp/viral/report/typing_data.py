"""A sample's typing as data: what the per-sample viral report is built from
(genointerp.viral.report.sample_report.report_from_typing), in JSON.

It holds every placed read's matches in input order, the reads no reference places, the bases of
the reads not called viral, how to get the host's other bases, and the names, lengths and taxids of
the references matched. A chunk's summary carries its typing, and merge-calls joins the chunks'
(`merge_typing`: the matches one after another in chunk order, the counts and bases summed), so
that the report it builds is the unchunked run's byte for byte: the EM sees the same reads in the
same order either way.

A read's matches are one string, "REF,EDITS,R_ST,R_EN,ALIGNED" per match joined by spaces, REF
an index into `refs` ([[name, virus, display name, genome length], ...], sorted by name): a
tumour's 100,000 viral reads with some 15 matches each then take about 20 MB, not the hundreds a
nested JSON list would.
"""

from __future__ import annotations

import numpy as np

from genointerp.errors import InputError
from genointerp.viral.report.host_depth import MappedBases
from genointerp.viral.typing.placed import PlacedReads, TypeHits


def sample_spec(sample: str, host_genome_size: float, host_bases: int | None, mapped: MappedBases | None,
                library: str = "dna") -> dict:
    """The report's settings: its sample name, the host genome size, and the host's bases given
    (--host-bases) or those of the mapped reads an --unmapped-only run leaves out (None: unknown,
    where no report is asked for; the report then refuses); and `library: rna` for an RNA-seq
    library (absent for DNA, so that a DNA sample's typing is what it was before the key)."""
    return {"sample": sample, "host_genome_size": host_genome_size, **({"library": library} if library != "dna" else {}),
            "host_bases": {"given": host_bases,
                           "mapped": None if mapped is None else mapped.bases,
                           "mapped_records": None if mapped is None else mapped.records,
                           "mapped_records_read": None if mapped is None else mapped.sampled,
                           # the host reads --unmapped-only left out: the kraken-style report's unclassified
                           "mapped_reads_left_out": None if mapped is None else mapped.reads}}


def typing_part(spec: dict, placed: PlacedReads | list[TypeHits], refs: dict[str, tuple], unplaced: int,
                named: dict[str, int], classified_host_bases: int, taxids: dict[str, int], reads: int = 0,
                as_text: bool = True) -> dict:
    """A sample's (or a chunk's) typing as JSON: `spec` (sample_spec) with the bases of the reads
    not called viral added, each placed read's matches (see the module's docstring) on the
    references `refs` (name -> (virus, display name, genome length)), the unplaced reads and
    those named by virus, and the taxids of the types matched; for an RNA library, the `reads`
    classified (the denominator of reads per million). Without `as_text`, `placed` is kept as it
    is (a run whose report is built at once: `placed_reads` hands it back, not read from text)."""
    part = {k: v for k, v in spec.items() if k != "host_bases"}
    part["host_bases"] = {**spec["host_bases"], "classified": classified_host_bases}
    if spec.get("library") == "rna":
        part["reads_classified"] = reads
    names = sorted(refs)
    part.update({"refs": [[name, *refs[name]] for name in names],
                 "placed": _as_text(placed, names) if as_text else placed,
                 "unplaced": unplaced, "named": dict(sorted(named.items())), "taxids": dict(sorted(taxids.items()))})
    return part


def _as_text(placed: PlacedReads | list[TypeHits], names: list[str]) -> list[str]:
    """Each read's matches as "REF,EDITS,R_ST,R_EN,ALIGNED" joined by spaces, REF its index in `names`."""
    if not isinstance(placed, PlacedReads):
        placed = PlacedReads.of(placed)
    index = {name: i for i, name in enumerate(names)}
    ref = [index.get(name, -1) for name in placed.names]  # (names no read matches are not in `names`)
    hits = [f"{ref[r]},{e},{s},{n},{a}" for r, e, s, n, a in
            zip(placed.ref.tolist(), placed.edits.tolist(), placed.r_st.tolist(), placed.r_en.tolist(),
                placed.aligned.tolist())]
    cut = np.r_[0, np.cumsum(placed.count)].tolist()
    return [" ".join(hits[a:b]) for a, b in zip(cut[:-1], cut[1:])]


def placed_reads(part: dict) -> PlacedReads:
    """The placed reads of a typing (typing_part), as arrays (genointerp.viral.typing.placed)."""
    placed = part["placed"]
    if isinstance(placed, PlacedReads):  # kept as they were (as_text False)
        return placed
    if placed and not isinstance(placed[0], str):
        return PlacedReads.of(placed)
    names = [r[0] for r in part["refs"]]
    if not placed:
        return PlacedReads.empty(names)
    count = np.array([read.count(" ") + 1 for read in placed], np.int64)
    numbers = np.array([int(v) for v in " ".join(placed).replace(" ", ",").split(",")], np.int64).reshape(-1, 5)
    if numbers.shape[0] != int(count.sum()):
        raise ValueError("a match without its five numbers")
    ref = numbers[:, 0]
    if ref.size and (ref.min() < 0 or ref.max() >= len(names)):
        raise IndexError(f"a reference index out of range ({len(names)} references)")
    return PlacedReads(names, count, np.ascontiguousarray(ref), *(np.ascontiguousarray(numbers[:, j]) for j in range(1, 5)))


def references(part: dict) -> dict[str, tuple[str, str, int]]:
    """name -> (virus, display name, genome length) of a typing's references."""
    return {name: (virus, display, length) for name, virus, display, length in part["refs"]}


def merge_typing(parts: list[tuple[str, dict]]) -> dict:
    """The typing of chunks given in chunk order, as (path, typing): the unchunked run's.
    InputError for chunks run with other report settings, and for a damaged typing."""
    same = ("sample", "host_genome_size")
    first_path = parts[0][0]
    settings: dict | None = None
    classified = unplaced = reads = 0
    placed: list[PlacedReads] = []
    refs: dict[str, tuple] = {}
    named: dict[str, int] = {}
    taxids: dict[str, int] = {}
    for path, part in parts:
        try:
            mine = {**{k: part[k] for k in same}, **{k: part[k] for k in ("library",) if k in part},
                    "host_bases": {k: v for k, v in part["host_bases"].items() if k != "classified"}}
            settings = settings or mine
            if mine != settings:
                raise InputError(f"{path}: its report settings {_settings(mine)} differ from {first_path}'s "
                                 f"{_settings(settings)}: run every chunk with the same --sample, --host-genome-size "
                                 "and --host-bases (and --library)")
            classified += int(part["host_bases"]["classified"])
            reads += int(part.get("reads_classified", 0))
            placed.append(placed_reads(part))
            unplaced += int(part["unplaced"])
            for table, new in ((refs, references(part)), (taxids, part["taxids"])):
                for name, value in new.items():
                    if table.setdefault(name, value) != value:
                        raise InputError(f"{path}: {name} is {value} here, {table[name]} in another chunk")
            for virus, n in part["named"].items():
                named[virus] = named.get(virus, 0) + int(n)
        except (KeyError, ValueError, IndexError, TypeError, AttributeError) as exc:
            raise InputError(f"{path}: its typing is damaged ({type(exc).__name__}: {exc})") from None
    return typing_part(settings, PlacedReads.concat(placed), refs, unplaced, named, classified, taxids, reads)


def _settings(s: dict) -> str:
    host = s["host_bases"]
    return (f"(sample {s['sample']!r}, host genome {s['host_genome_size']:g} bp, host bases given {host['given']}, "
            f"mapped {host['mapped']}, library {s.get('library', 'dna')})")
