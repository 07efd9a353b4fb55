"""Long reads: classify-reads' calls and typing and find-integrations' junctions on nanopore-like
and HiFi-like reads, from pbsim (Debian `pbsim`, the peer simulator) and from `genointerp
simulate-reads --platform nanopore|hifi`, side by side with the same numbers for both.

Sources: HPV16 and HPV18 (../shared/data/viral/hpv_genomes.fa; panel types), 3 Mb of GRCh37 chr20
(30,000,000-33,000,000, contig `chr20_30_33Mb`: not a part the built-in model's human filter was
fitted on alone, see benchmarks/README.md), and integration templates: eight of 6 kb of host +
an HPV16 or HPV18 fragment of 2.5-4 kb + the host's next 6 kb (16 junctions), the host from
chr20:40,000,000-40,200,000.
- pbsim CLR (`--data-type CLR --model_qc model_qc_clr`, accuracy 0.90, lengths 1-20 kb, mean 8 kb)
  and pbsim CCS (`--data-type CCS --model_qc model_qc_ccs`, accuracy 0.99);
- simulate-reads --platform nanopore and --platform hifi (their defaults: 1-20 kb).
Per read set: classify-reads (-t 1) on the HPV and human reads together: human reads called viral
and with status ambiguous; HPV reads called; HPV reads typed to their genome's type (the calls'
`reference`); reads with call NA. Integration reads aligned with `minimap2 -ax map-ont` (both
simulators' reads, also the HiFi-like ones: map-ont is what a user of either would run first),
sorted and indexed with samtools; find-integrations: truth junctions with a call on the same
host strand within 10 bp of the host base and 10 bp of the viral base (on the truth's genome;
a lineage genome of the type counts on the host alone), and calls matching no junction.

    python benchmarks/long_reads.py --shared ../shared/data [--out bench-output/long_reads] [--seed 1]

Needs pbsim, minimap2 and samtools on PATH (`apt-get install pbsim minimap2 samtools`).
"""

from __future__ import annotations

import argparse
import csv
import random
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import GENOINTERP, out_dir, require, table, timed  # noqa: E402

PBSIM_MODELS = Path("/usr/share/pbsim/models")
FLANK = 6000
HPV = ("HPV16", "HPV18")


def fasta(path: Path, names=None) -> dict[str, str]:
    """name -> sequence of a FASTA's records (those of `names` only, where given)."""
    import pysam

    return {r.name: r.sequence for r in pysam.FastxFile(str(path)) if names is None or r.name in names}


def write_fasta(path: Path, records: dict[str, str]) -> None:
    path.write_text("".join(f">{name}\n{seq}\n" for name, seq in records.items()))


def fastq_records(path: Path):
    with open(path) as fh:
        lines = fh.read().splitlines()
    for i in range(0, len(lines) - 3, 4):
        yield lines[i][1:].split()[0], lines[i + 1], lines[i + 3]


def pbsim(work: Path, ref: Path, prefix: str, kind: str, depth: float, seed: int, out: Path, label: str) -> None:
    """pbsim's reads of each record of `ref`, renamed LABEL|CONTIG|n (pbsim writes one FASTQ per
    record, in the reference's order)."""
    names = list(fasta(ref))
    accuracy = "0.90" if kind == "CLR" else "0.99"
    subprocess.run(["pbsim", "--prefix", prefix, "--data-type", kind, "--depth", str(depth), "--length-mean", "8000",
                    "--length-min", "1000", "--length-max", "20000", "--accuracy-mean", accuracy, "--seed", str(seed),
                    "--model_qc", str(PBSIM_MODELS / f"model_qc_{kind.lower()}"), str(ref)], cwd=work, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out, "a") as fh:
        for i, name in enumerate(names, 1):
            part = work / f"{prefix}_{i:04d}.fastq"
            for n, (_, seq, qual) in enumerate(fastq_records(part)):
                fh.write(f"@{label}|{name}|{n}\n{seq}\n+\n{qual}\n")
            for ext in ("fastq", "maf", "ref"):
                (work / f"{prefix}_{i:04d}.{ext}").unlink()


def ours(ref: Path, label: str, platform: str, count: int, seed: int, out: Path, circular: bool) -> None:
    """simulate-reads' reads of `ref`, renamed LABEL|CONTIG|n as pbsim's are."""
    tmp = out.with_suffix(f".{label}.fq")
    cmd = [*GENOINTERP, "-q", "simulate-reads", "-s", f"{label}={ref}", "--count", f"{label}={count}", "--platform",
           platform, "--seed", str(seed), "-o", str(tmp), "--force"]
    timed(cmd + (["--circular", label] if circular else []))
    with open(out, "a") as fh:
        for n, (name, seq, qual) in enumerate(fastq_records(tmp)):
            fh.write(f"@{label}|{name.split('|')[2]}|{n}\n{seq}\n+\n{qual}\n")
    tmp.unlink()


def calls_numbers(tsv: Path) -> dict:
    hpv = human = 0
    out = {"human called": 0, "human ambiguous": 0, "HPV called": 0, "HPV typed right": 0, "NA calls": 0}
    with open(tsv) as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            label, contig, _ = row["read_id"].split("|")
            out["NA calls"] += row["call"] == "NA"
            if label == "human":
                human += 1
                out["human called"] += row["call"] == "viral"
                out["human ambiguous"] += row["status"] == "ambiguous"
            else:
                hpv += 1
                out["HPV called"] += row["call"] == "viral"
                out["HPV typed right"] += row["reference"] == contig
    return {"human reads": human, "HPV reads": hpv, **out,
            "HPV called %": f"{100 * out['HPV called'] / max(hpv, 1):.1f}",
            "typed right %": f"{100 * out['HPV typed right'] / max(hpv, 1):.1f}"}


def junction_numbers(tsv: Path, truth: list[tuple]) -> dict:
    with open(tsv) as fh:
        calls = list(csv.DictReader(fh, delimiter="\t"))
    used, found = set(), 0
    for host_pos, host_strand, virus, vpos in truth:
        for i, c in enumerate(calls):
            if c["host_strand"] == host_strand and abs(int(c["host_pos"]) - 1 - host_pos) <= 10 \
                    and c["type"] == virus and (c["viral_contig"] != virus or abs(int(c["viral_pos"]) - 1 - vpos) <= 10):
                used.add(i)
                found += 1
                break
    return {"junctions": len(truth), "found within 10 bp": found, "calls": len(calls),
            "false calls": len(calls) - len(used)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--out", default="bench-output/long_reads")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    require("pbsim", "minimap2", "samtools")
    shared, work = Path(args.shared), out_dir(args.out).resolve()
    rng = random.Random(args.seed)
    hpv = fasta(shared / "viral" / "hpv_genomes.fa", set(HPV))
    write_fasta(work / "hpv.fa", {n: hpv[n] for n in HPV})
    import pysam

    chr20 = pysam.FastaFile(str(shared / "human" / "GRCh37.chr20.fa.gz"))
    write_fasta(work / "human.fa", {"chr20_30_33Mb": chr20.fetch("20", 30_000_000, 33_000_000)})
    host = chr20.fetch("20", 40_000_000, 40_200_000)
    write_fasta(work / "host.fa", {"chr20_40Mb": host})
    templates, truth = {}, []
    for i in range(8):
        site = 10_000 + i * 22_000
        virus = HPV[i % 2]
        genome = hpv[virus]
        start, length = rng.randrange(len(genome)), rng.randrange(2500, 4001)
        templates[f"ins{i + 1}"] = host[site - FLANK:site] + (genome * 2)[start:start + length] + host[site:site + FLANK]
        truth += [(site - 1, "+", virus, start), (site, "-", virus, (start + length - 1) % len(genome))]
    write_fasta(work / "templates.fa", templates)
    timed(["samtools", "faidx", str(work / "host.fa")])

    rows, jrows = [], []
    for name, kind, platform in (("pbsim CLR 0.90", "CLR", None), ("simulate-reads nanopore", None, "nanopore"),
                                 ("pbsim CCS 0.99", "CCS", None), ("simulate-reads hifi", None, "hifi")):
        reads, ints = work / f"{name.replace(' ', '_')}.fq", work / f"{name.replace(' ', '_')}.int.fq"
        for p in (reads, ints):
            p.unlink(missing_ok=True)
        if kind:
            pbsim(work, work / "hpv.fa", "hpv", kind, 60, args.seed, reads, "hpv")
            pbsim(work, work / "human.fa", "hum", kind, 2, args.seed, reads, "human")
            pbsim(work, work / "templates.fa", "int", kind, 8, args.seed, ints, "int")
        else:
            ours(work / "hpv.fa", "hpv", platform, 110, args.seed, reads, True)
            ours(work / "human.fa", "human", platform, 700, args.seed, reads, False)
            ours(work / "templates.fa", "int", platform, 70, args.seed, ints, False)
        tsv = reads.with_suffix(".calls.tsv")
        seconds = timed([*GENOINTERP, "-q", "classify-reads", str(reads), "-o", str(tsv), "-t", "1", "--force"])
        rows.append({"reads": name, **calls_numbers(tsv), "seconds": f"{seconds:.1f}"})
        bam = ints.with_suffix(".bam")
        subprocess.run(f"minimap2 -ax map-ont -t 1 {work / 'host.fa'} {ints} 2>/dev/null | samtools sort -o {bam} - "
                       f"2>/dev/null && samtools index {bam}", shell=True, check=True, executable="/bin/bash")
        jtsv = ints.with_suffix(".junctions.tsv")
        timed([*GENOINTERP, "-q", "find-integrations", str(bam), "-R", str(work / "host.fa"), "-o", str(jtsv), "--force"])
        jrows.append({"reads": name, **junction_numbers(jtsv, truth)})
    print(table(rows, list(rows[0])))
    print()
    print(table(jrows, list(jrows[0])))


if __name__ == "__main__":
    main()
