"""simulate-reads sample mode: a tumour-like sample holding viral types at a viral load.

The viral label's genomes are mixed by weight (--type-mix CONTIG=W; equal by default) at a load
in copies per host haploid genome (--viral-load): a type of weight share w and genome length g
gets load * w * g * F / G fragments, F the host's fragments and G the host genome size (the host
label's length, or --host-genome-size); so its depth is load * w times the host's. Each viral
genome becomes its own label, VIRAL:CONTIG (e.g. viral:HPV16), which puts the type in the read
names and the truth table. The host and any other labels get their reads from --count.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from genointerp.errors import InputError
from genointerp.seq.simulate import Layout, Source


@dataclass(frozen=True)
class SamplePlan:
    viral_label: str
    host_label: str
    load: float  # copies per host haploid genome, all types together
    mix: dict[str, float] = field(default_factory=dict)  # contig -> weight; empty: equal
    host_genome_size: float | None = None  # None: the host label's length


def sample_sources(sources: dict[str, Source], plan: SamplePlan, layout: Layout,
                   counts: dict[str, int]) -> tuple[dict[str, Source], dict[str, int], list[str]]:
    """Sources with the viral label split into one label per genome, reads per label, and lines
    saying each type's reads and copies."""
    for label in (plan.viral_label, plan.host_label):
        if label not in sources:
            raise InputError(f"--sample: label {label!r} names no --source (labels: {', '.join(sources)})")
    if plan.viral_label == plan.host_label:
        raise InputError("--sample VIRAL=HOST: the viral and host labels must differ")
    if plan.viral_label in counts:
        raise InputError(f"--count {plan.viral_label}: in sample mode the viral reads come from --viral-load")
    missing = [lab for lab in sources if lab != plan.viral_label and lab not in counts]
    if missing:
        raise InputError(f"sample mode: give --count for {', '.join(missing)} (the host's reads set the depth)")
    viral = sources[plan.viral_label]
    names = [c.name for c in viral.contigs]
    unknown = [n for n in plan.mix if n not in names]
    if unknown:
        raise InputError(f"--type-mix: {unknown[0]!r} is no contig of label {plan.viral_label!r} ({', '.join(names[:5])}...)")
    weights = {n: plan.mix.get(n, 0.0) for n in names} if plan.mix else {n: 1.0 for n in names}
    total = sum(weights.values())
    if total <= 0:
        raise InputError("--type-mix: the weights add up to 0")
    host_size = plan.host_genome_size or float(sources[plan.host_label].lengths.sum())
    out_sources = {lab: s for lab, s in sources.items() if lab != plan.viral_label}
    out_counts = {lab: counts[lab] for lab in out_sources}
    lines = []
    for c in viral.contigs:
        w = weights[c.name] / total
        if w <= 0:
            continue
        label = f"{plan.viral_label}:{c.name}"
        codes = viral.padded[c.offset: c.offset + c.length]
        out_sources[label] = Source(label, [(c.name, codes, c.origin, c.origin_length)], viral.circular, layout)
        out_counts[label] = int(round(plan.load * w * c.length * counts[plan.host_label] / host_size))
        lines.append(f"{c.name}: {plan.load * w:g} copies per host genome, {out_counts[label]:,} reads")
    return out_sources, out_counts, lines
