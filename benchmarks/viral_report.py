"""Benchmark of classify-reads' per-sample viral report (issue 32): top type, minor types, copies
per genome, HPV-negative samples, other oncoviruses, held-out HBV/HCV genotypes, speed and the
model folder's size; one table row per measure against the issue's target.

    .venv/bin/python benchmarks/viral_report.py [--one 200 --two 20 --art-one 60 --art-two 10 --negative 100]
        [--no-oncoviruses] [--no-holdout] [--speed 300000 | --speed 0] [--out bench-output/viral_report]

Host: 2 Mb of GRCh37 chr20 (../shared/data/human, from 30 Mb), `--host-genome-size` 2e6 on both
sides, so the load is copies per (2 Mb) host genome at about 1.5x host depth (20,000 host reads of
150 bp). HPV types from ../shared/data/viral/hpv_genomes.fa (the main genome of each type): 30
types incl. HPV16/31/35, HPV18/45, HPV33/52/58. Samples are made two ways:

  simulate-reads  its sample mode (`--sample viral=human --viral-load L --type-mix T=W`); truth is
                  the load asked for
  ART             `art_illumina -ss HS25` (Debian art-nextgen-simulation-tools), another
                  simulator: host reads and each type's reads made apart and mixed at the load;
                  truth from the counts (viral bases / genome length over host bases / 2 Mb)

One-type samples cycle over the 30 types at loads drawn log-uniformly from 0.5 to 50 copies;
two-type samples put a minor type at 1-10 % of the viral load beside a major one (20 copies).
Negatives: the host with bacterial (E. coli 536 slice, test-data; K. pneumoniae MGH 78578, Debian
kleborate-examples), fungal (S. cerevisiae chrI and chrII, Debian gbrowse-data), protist
(Plasmodium falciparum 3D7, first 4 Mb, Debian smalt-examples), phage lambda (Debian
bowtie2-examples) and phiX174 (UniVec_Core, Debian ncbi-data) reads, poly-G reads, human reads
with poly-G tails and adapter dimers (benchmarks/viral_reads.py's generators); even-numbered
negatives by simulate-reads, odd ones by ART. Yeast and P. falciparum are held out of the XVir
model's training but are among the negatives its seed and protein indexes were built against.

--oncoviruses: ART reads of every genome of ../shared/data/viral/oncoviruses.fa (HBV, HCV, EBV,
KSHV, HTLV-1, MCPyV) through the built-in model; of the reads called viral, the share whose
`reference` names the right virus. --holdout: the same for HBV genotypes A and D (HBV_2, HBV_5)
and two HCV genomes (HCV_10, HCV_12) through a copy of the built-in model whose references and
indexes leave those four out (scripts/build_default_model.py's ship_evidence, as
benchmarks/find_integrations.py does; needs `build_default_model.py --stage refs` in
build/default-model). --speed N: classify-reads with and without --report on simulated samples
of N host reads holding HPV16 at --speed-loads copies (5 and 50: about 2 and 16 % of the reads
viral), 1 thread, each run twice, the faster kept.

Per-sample results are kept under OUT/samples/ and reused on a rerun (delete OUT to start over);
the table and the command go to OUT/results.md.

Results (AMD EPYC, 2 cores shared with other jobs, 2026-11-26; about 35 min from scratch): top type
right in 260 of 260 one-type samples (200 simulate-reads, 60 ART; 30 types, 0.5-50 copies); minor
type (1.2-9.9 % of viral reads) detected in 30 of 30 two-type samples (20 + 10); copies within
+-20 % in 215 of 215 samples at >= 1 copy (largest error 0.5 %); 100 negatives: no read called
viral, so no type listed (thresholds 10 reads / 3 unique / 300 bases untouched); oncovirus reads
named at the virus level 4,143 of 4,143; held-out HBV genotypes A and D 385 of 392 called reads
named HBV (7 unplaced), held-out HCV Tr-Kj and JK049 196 of 353 (157 unplaced: the reads are called
viral by their seeds but lie at about 70-84 % identity to the nearest HCV the copy keeps, below
what placement aligns; none named a wrong virus). Since unplaced reads are named by their seeds'
virus labels (genointerp.viral.typing.naming; `--one 0 --two 0 --art-one 0 --art-two 0 --negative 0
--speed 0`, the model copy rebuilt with the current protein seed): hold-out 765 of 765 called
reads named (HBV 392 of 392, HCV 373 of 373; 583 of 765, 76.2 %, on the same copy without the
naming), none a wrong virus; oncoviruses 4,142 of 4,142; --report keeps 100-106 % of the reads/s at 5
copies (2 % viral) and 96-97 % at 50 copies (16 % viral), two runs of the benchmark; built-in
model folder 4.57 MB as committed (5.58 MB with the protein index being rebuilt that afternoon).
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pysam
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from viral_reads import LAMBDA, PHIX_ID, _univec, art, synthetic, write_fasta  # noqa: E402

from genointerp.cli import app  # noqa: E402
from genointerp.resources import builtin_model_dir  # noqa: E402
from genointerp.viral.model_files import REFS_FILE  # noqa: E402
from genointerp.viral.panel import name_reference  # noqa: E402
from genointerp.viral.report.sample_report import LOW_READS, MIN_COVERED, MIN_READS, MIN_UNIQUE  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
TYPES = ["HPV16", "HPV31", "HPV35", "HPV18", "HPV45", "HPV33", "HPV52", "HPV58", "HPV6", "HPV11", "HPV39", "HPV51",
         "HPV56", "HPV59", "HPV66", "HPV68", "HPV73", "HPV26", "HPV53", "HPV82", "HPV70", "HPV2", "HPV1", "HPV4",
         "HPV5", "HPV8", "HPV3", "HPV10", "HPV27", "HPV57"]
SPARE = ["HPV34", "HPV61", "HPV62", "HPV81", "HPV84", "HPV30", "HPV67", "HPV69", "HPV9", "HPV7"]  # if one is missing
HOST_START, HOST_SIZE = 30_000_000, 2_000_000
READ_LENGTH = 150
KLEBS = "/usr/share/doc/kleborate/examples/data/MGH78578.fna.xz"
YEAST = ["/var/lib/gbrowse/databases/yeast_scaffolds/chr1.fa", "/var/lib/gbrowse/databases/yeast_scaffolds/chr2.fa"]
PFAL, PFAL_BASES = "/usr/share/doc/smalt/test/data/genome_1.fa.gz", 4_000_000
# contaminant reads per negative sample (beside the host's): genomic sources, then synthetic ones
CONTAMINANTS = {"bacterial": 600, "fungal": 600, "protist": 600, "lambda": 300, "phix": 200}
SYNTHETIC = {"polyg": 100, "polyg_tail": 100, "adapter": 100}
HOLDOUT = ("HBV_2", "HBV_5", "HCV_10", "HCV_12")  # HBV genotypes A and D, HCV isolates Tr-Kj and JK049
ONCO_READS = 200  # ART reads per oncovirus genome


def cli(*args) -> None:
    res = CliRunner().invoke(app, ["-q", *[str(a) for a in args]], catch_exceptions=False)
    if res.exit_code != 0:
        raise SystemExit(res.output)


def records(path: str | Path) -> list[tuple[str, str]]:
    with pysam.FastxFile(str(path)) as fh:
        return [(r.name, r.sequence.upper()) for r in fh]


def prepare(work: Path) -> None:
    fa = pysam.FastaFile(str(SHARED / "human" / "GRCh37.chr20.fa.gz"))
    write_fasta(work / "host.fa", [("20_slice", fa.fetch("20", HOST_START, HOST_START + HOST_SIZE).upper())])
    hpv = {n: s for n, s in records(SHARED / "viral" / "hpv_genomes.fa")}
    TYPES[:] = ([t for t in TYPES if t in hpv] + [t for t in SPARE if t in hpv])[:30]
    write_fasta(work / "hpv.fa", [(t, hpv[t]) for t in TYPES])
    (work / "types").mkdir(exist_ok=True)
    for t in TYPES:
        write_fasta(work / "types" / f"{t}.fa", [(t, hpv[t])])
    if (work / "contaminants.done").exists():
        return
    bacteria = records(ROOT / "test-data" / "ecoli_slice.fa")
    with lzma.open(KLEBS, "rt") as fh:
        from Bio import SeqIO

        bacteria += [(f"MGH78578_{r.id}", str(r.seq).upper()) for r in SeqIO.parse(fh, "fasta")]
    write_fasta(work / "bacterial.fa", bacteria)
    write_fasta(work / "fungal.fa", [rec for path in YEAST for rec in records(path)])
    pfal, total = [], 0
    for name, seq in records(PFAL):
        if total >= PFAL_BASES:
            break
        pfal.append((name, seq[: PFAL_BASES - total]))
        total += len(pfal[-1][1])
    write_fasta(work / "protist.fa", pfal)
    write_fasta(work / "lambda.fa", records(LAMBDA))
    write_fasta(work / "phix.fa", [(n, s) for n, s in _univec() if PHIX_ID in n])
    (work / "contaminants.done").write_text("ok\n")


def art_reads(work: Path, fasta: Path, n: int, seed: int, tag: str) -> list[tuple[str, str, str]]:
    if n <= 0:
        return []
    return [(f"{tag}:{name}", s, q) for name, s, q in art(fasta, work / f"art_{tag}", READ_LENGTH, n, seed)]


def write_fastq(path: Path, recs) -> None:
    with open(path, "w") as fh:
        for name, seq, qual in recs:
            fh.write(f"@{name}\n{seq}\n+\n{qual}\n")


def classify(work: Path, name: str, fq: Path, model: Path | None = None) -> tuple[dict, Path]:
    tsv = work / f"{name}.tsv"
    args = ["classify-reads", fq, "-o", tsv, "--summary", work / f"{name}.json",
            "--report", work / f"{name}.report.tsv", "--host-genome-size", HOST_SIZE, "--force"]
    if model is not None:
        args += ["-m", model]
    cli(*args)
    return json.loads((work / f"{name}.json").read_text())["viral_report"], tsv


def viral_calls(tsv: Path) -> list[tuple[str, str]]:
    """(read id, reference) of the reads called viral."""
    lines = tsv.read_text().splitlines()
    head = lines[0].split("\t")
    ci, ri = head.index("call"), head.index("reference")
    out = []
    for line in lines[1:]:
        f = line.split("\t")
        if f[ci] == "viral":
            out.append((f[0], f[ri]))
    return out


def cached(work: Path, name: str, make) -> dict:
    path = work / "samples" / f"{name}.json"
    if path.exists():
        return json.loads(path.read_text())
    res = make()
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(res) + "\n")
    for suffix in (".fq", ".tsv", ".json", ".report.tsv"):
        (work / f"{name}{suffix}").unlink(missing_ok=True)
    return res


def positive(work: Path, name: str, mix: dict[str, float], load: float, host_reads: int, seed: int, mode: str,
             lengths: dict[str, int]) -> dict:
    """A sample of the host holding `mix` (type -> share of the viral copies) at `load` copies per
    host genome; returns the report and the truth (copies per type)."""
    fq = work / f"{name}.fq"
    if mode == "sim":
        args = ["simulate-reads", "-s", f"human={work / 'host.fa'}", "--count", f"human={host_reads}", "--seed", seed,
                "-s", f"viral={work / 'hpv.fa'}", "--circular", "viral", "--viral-sample", "viral=human",
                "--viral-load", load, "--host-genome-size", HOST_SIZE, "-o", fq, "--force"]
        args += [a for t, w in mix.items() for a in ("--type-mix", f"{t}={w}")]
        cli(*args)
        truth = {t: load * w for t, w in mix.items()}
    else:
        host = art_reads(work, work / "host.fa", host_reads, seed, "human")
        host_depth = sum(len(s) for _, s, _ in host) / HOST_SIZE
        recs, truth = list(host), {}
        for j, (t, w) in enumerate(mix.items()):
            n = max(1, round(load * w * host_depth * lengths[t] / READ_LENGTH))
            viral = art_reads(work, work / "types" / f"{t}.fa", n, seed * 7 + j, f"viral_{t}")
            truth[t] = sum(len(s) for _, s, _ in viral) / lengths[t] / host_depth
            recs += viral
        order = np.random.default_rng(seed).permutation(len(recs))
        write_fastq(fq, [recs[i] for i in order])
    vr, _ = classify(work, name, fq)
    return {"report": vr, "truth": truth, "load": load, "mix": mix}


def negative(work: Path, name: str, host_reads: int, seed: int, mode: str) -> dict:
    fq = work / f"{name}.fq"
    if mode == "sim":
        args = ["simulate-reads", "-s", f"human={work / 'host.fa'}", "--count", f"human={host_reads}", "--seed", seed,
                "-o", fq, "--force"]
        for kind, n in CONTAMINANTS.items():
            args += ["-s", f"{kind}={work / (kind + '.fa')}", "--count", f"{kind}={n}"]
        cli(*args)
        recs = [(r.name, r.sequence, r.quality) for r in pysam.FastxFile(str(fq))]
    else:
        recs = art_reads(work, work / "host.fa", host_reads, seed, "human")
        for j, (kind, n) in enumerate(CONTAMINANTS.items()):
            recs += art_reads(work, work / f"{kind}.fa", n, seed * 11 + j, kind)
    human = [r for r in recs if _source(r[0]) == "human"][:500]
    for j, (kind, n) in enumerate(SYNTHETIC.items()):
        recs += [(f"{kind}:{rn}", s, q) for rn, s, q in synthetic(kind, n, READ_LENGTH, human, seed * 13 + j)]
    write_fastq(fq, recs)
    vr, tsv = classify(work, name, fq)
    called = viral_calls(tsv)
    return {"report": vr, "called": len(called), "called_by_source": _count(_source(r) for r, _ in called)}


def _source(read: str) -> str:
    """What a read was made from: simulate-reads names it LABEL|..., this benchmark SOURCE:..."""
    return read.split("|")[0].split(":")[0]


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


def virus_of(label: str) -> str:
    """The virus a `reference` label names ('HBV genotype C' -> HBV, 'HCV (unplaced)': a read no
    genome places, named by its seeds -> HCV); '?' when tied types name two."""
    viruses = {name_reference(part.strip().split()[0]).virus for part in label.split(",") if part.strip()}
    return viruses.pop() if len(viruses) == 1 else "?"


def oncovirus_reads(work: Path, names: set[str] | None, tag: str, seed: int) -> Path:
    """ART reads of the oncovirus genomes (all, or `names`), each read named GENOME:..."""
    recs = []
    for j, (name, seq) in enumerate(records(SHARED / "viral" / "oncoviruses.fa")):
        if names is not None and name not in names:
            continue
        write_fasta(work / "onco_one.fa", [(name, seq)])
        recs += art_reads(work, work / "onco_one.fa", ONCO_READS, seed + j, name)
    fq = work / f"{tag}.fq"
    write_fastq(fq, recs)
    return fq


def naming(work: Path, fq: Path, name: str, model: Path | None) -> dict:
    """Per virus: reads, reads called viral, and of those the ones whose reference names the virus."""
    total = _count(virus_of(r.split(":")[0]) for r in (x.name for x in pysam.FastxFile(str(fq))))
    vr, tsv = classify(work, name, fq, model)
    per: dict[str, dict] = {v: {"reads": n, "called": 0, "named": 0, "wrong": {}} for v, n in total.items()}
    for read, ref in viral_calls(tsv):
        truth = virus_of(read.split(":")[0])
        got = virus_of(ref) if ref not in ("NA", "unplaced") else ref
        per[truth]["called"] += 1
        if got == truth:
            per[truth]["named"] += 1
        else:
            per[truth]["wrong"][got] = per[truth]["wrong"].get(got, 0) + 1
    return {"per_virus": per, "detected": vr["detected"]}


def holdout_model(out: Path, work: Path) -> Path:
    """A copy of the built-in model without the HOLDOUT genomes (made once). Its indexes are built
    in a scratch folder of links to build/default-model's negatives, so that ship_evidence's
    viral_all.fa does not overwrite the one there."""
    import shutil

    sys.path.insert(0, str(ROOT / "scripts"))
    from build_default_model import ALL_NEGATIVES, ship_evidence

    folder = out / "model_holdout"
    if (folder / "done").exists():
        return folder
    if not all((work / n).exists() for n in ALL_NEGATIVES):
        sys.exit(f"{work}: run scripts/build_default_model.py --stage refs first (the negatives)")
    scratch = out / "holdout_work"
    scratch.mkdir(parents=True, exist_ok=True)
    for n in ALL_NEGATIVES:
        if not (scratch / n).exists():
            (scratch / n).symlink_to((work / n).resolve())
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(builtin_model_dir(), folder)
    ship_evidence(SHARED, scratch, folder, leave_out=HOLDOUT)
    (folder / "done").write_text("ok\n")
    return folder


def speed(work: Path, host_reads: int, load: float) -> dict:
    fq = work / f"speed_{load:g}.fq"
    if not fq.exists():
        cli("simulate-reads", "-s", f"human={work / 'host.fa'}", "--count", f"human={host_reads}", "--seed", 7,
            "-s", f"viral={work / 'types' / 'HPV16.fa'}", "--circular", "viral", "--viral-sample", "viral=human",
            "--viral-load", load, "--host-genome-size", HOST_SIZE, "-o", fq, "--force")
    n = sum(1 for _ in pysam.FastxFile(str(fq)))
    base = [sys.executable, "-m", "genointerp", "-q", "classify-reads", str(fq), "-o", str(work / "speed.tsv"),
            "--summary", str(work / "speed.json"), "--host-genome-size", str(HOST_SIZE), "--threads", "1", "--force"]
    with_report = base + ["--report", str(work / "speed.report.tsv")]
    times: dict[str, list[float]] = {"without": [], "with": []}
    for _ in range(2):
        for key, cmd in (("without", base), ("with", with_report)):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            times[key].append(time.perf_counter() - t0)
    viral = json.loads((work / "speed.json").read_text())["viral_report"]["viral_reads_placed"]
    return {"reads": n, "viral_placed": viral, "times": times,
            "reads_per_s": {k: n / min(v) for k, v in times.items()}}


def model_size() -> int:
    """Bytes of the built-in model as it ships: the prebuilt indexes and folded weights that
    `make install` derives from it beside the model (ignored by git) are left out."""
    from genointerp.viral.model_files import FOLDED_FILE, INDEX_DIR
    root = builtin_model_dir()
    return sum(p.stat().st_size for p in root.rglob("*")
               if p.is_file() and p.relative_to(root).parts[0] not in (INDEX_DIR, FOLDED_FILE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", type=int, default=200, help="one-type samples by simulate-reads")
    ap.add_argument("--two", type=int, default=20, help="two-type samples by simulate-reads")
    ap.add_argument("--art-one", type=int, default=60, help="one-type samples by ART")
    ap.add_argument("--art-two", type=int, default=10, help="two-type samples by ART")
    ap.add_argument("--negative", type=int, default=100)
    ap.add_argument("--host-reads", type=int, default=20_000)
    ap.add_argument("--oncoviruses", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--holdout", action=argparse.BooleanOptionalAction, default=True,
                    help="needs scripts/build_default_model.py --stage refs in --work")
    ap.add_argument("--speed", type=int, default=300_000, help="host reads of the speed samples (0: skip)")
    ap.add_argument("--speed-loads", default="5,50", help="HPV16 copies per genome of the speed samples")
    ap.add_argument("--seed", type=int, default=32)
    ap.add_argument("--work", default="build/default-model", help="build_default_model.py's references")
    ap.add_argument("--out", default="bench-output/viral_report")
    args = ap.parse_args()
    t0 = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = out
    prepare(work)
    lengths = {t: len(s) for t, s in records(work / "hpv.fa")}
    rows: list[tuple[str, str, str]] = []
    notes: list[str] = []

    # one type, then two types, by each simulator
    top_all: list[bool] = []
    for mode, n_one, n_two, offset in (("sim", args.one, args.two, 0), ("art", args.art_one, args.art_two, 5000)):
        rng = np.random.default_rng(args.seed + offset)
        label = "simulate-reads" if mode == "sim" else "ART"
        top_ok, load_err, wrong = [], [], []
        for i in range(n_one):
            t = TYPES[i % len(TYPES)]
            load = float(math.exp(rng.uniform(math.log(0.5), math.log(50))))
            res = cached(work, f"{mode}_one{i}", lambda: positive(work, f"{mode}_one{i}", {t: 1.0}, load,
                                                                   args.host_reads, offset + i + 1, mode, lengths))
            vr, truth = res["report"], res["truth"][t]
            top_ok.append(vr["top_type"] == t)
            if vr["top_type"] != t:
                wrong.append(f"{t}@{truth:.2f}->{vr['top_type']}")
            row = next((r for r in vr["types"] if r["type"] == t), None)
            if truth >= 1:
                est = row["copies_per_genome"] if row is not None and row["copies_per_genome"] is not None else 0.0
                load_err.append(est / truth - 1)
        top_all += top_ok
        if n_one:
            rows.append((f"one type, {label}: top type right ({n_one} samples, {len(set(TYPES[:n_one]))} types, "
                         "0.5-50 copies)", ">= 98 %", f"{100 * np.mean(top_ok):.1f} %"))
            err = np.abs(load_err)
            rows.append((f"load, {label}: copies within +-20 % of truth at >= 1 copy ({len(err)} samples)", "all",
                         f"{100 * np.mean(err <= 0.2):.1f} % (median error {100 * np.median(err):.1f} %, "
                         f"largest {100 * err.max():.1f} %, mean bias {100 * np.mean(load_err):+.1f} %)"))
            notes.append(f"wrong top types ({label}): {', '.join(wrong) or 'none'}")
        minor_ok, shares, two_wrong = [], [], []
        for i in range(n_two):
            major, minor = rng.choice(len(TYPES), 2, replace=False)
            share = float(rng.uniform(0.01, 0.10))
            mix = {TYPES[major]: 1 - share, TYPES[minor]: share}
            res = cached(work, f"{mode}_two{i}", lambda: positive(work, f"{mode}_two{i}", mix, 20.0, args.host_reads,
                                                                   offset + 1000 + i, mode, lengths))
            vr = res["report"]
            # the minor's share of the viral reads the sample holds (copies x genome length)
            w = {t: c * lengths[t] for t, c in res["truth"].items()}
            shares.append(w[TYPES[minor]] / sum(w.values()))
            found = TYPES[minor] in vr["detected"] and vr["top_type"] == TYPES[major]
            minor_ok.append(found)
            if not found:
                two_wrong.append(f"{TYPES[minor]}@{shares[-1]:.3f} beside {TYPES[major]} (detected {vr['detected']})")
        if n_two:
            rows.append((f"two types, {label}: minor at {100 * min(shares):.1f}-{100 * max(shares):.1f} % of viral "
                         f"reads detected, major on top ({n_two} samples, 20 copies)", ">= 90 %",
                         f"{100 * np.mean(minor_ok):.1f} %"))
            notes.append(f"missed minors ({label}): {', '.join(two_wrong) or 'none'}")
    if top_all and args.one and args.art_one:
        rows.insert(0, (f"one type, all: top type right ({len(top_all)} samples)", ">= 98 %",
                        f"{100 * np.mean(top_all):.1f} %"))

    # negatives
    if args.negative:
        ref_len = {n: len(s) for n, s in records(builtin_model_dir() / REFS_FILE)}
        detected, low, most = 0, 0, {"reads": (0.0, ""), "unique": (0, ""), "covered": (0, "")}
        called, by_source = 0, {}
        for i in range(args.negative):
            mode = "sim" if i % 2 == 0 else "art"
            res = cached(work, f"neg{i}", lambda: negative(work, f"neg{i}", args.host_reads, 2000 + i, mode))
            vr = res["report"]
            detected += bool(vr["detected"])
            low += any(r["status"] == "low_evidence" for r in vr["types"])
            called += res["called"]
            for k, v in res["called_by_source"].items():
                by_source[k] = by_source.get(k, 0) + v
            for r in vr["types"]:
                cov = round((r["genome_fraction"] or 0) * ref_len.get(r["reference"], 0))  # None: virus-level row
                for key, val in (("reads", r["reads"]), ("unique", r["unique_reads"]), ("covered", cov)):
                    if val > most[key][0]:
                        most[key] = (val, f"neg{i} {r['type']}")
        per = sum(CONTAMINANTS.values()) + sum(SYNTHETIC.values())
        rows.append((f"negatives: samples with a virus detected ({args.negative}: {args.host_reads:,} human + {per:,} "
                     "bacterial/fungal/protist/lambda/phiX/poly-G/adapter reads each)", "0",
                     f"{detected} ({low} with a type at low_evidence)"))
        rows.append(("negatives: most EM reads of any listed type", f"detected needs >= {MIN_READS}, "
                     f"low_evidence >= {LOW_READS}", f"{most['reads'][0]:.2f} ({most['reads'][1] or '-'})"))
        rows.append(("negatives: most unique reads of any listed type", f">= {MIN_UNIQUE} for detected",
                     f"{most['unique'][0]} ({most['unique'][1] or '-'})"))
        rows.append(("negatives: most bases covered of any listed type", f">= {MIN_COVERED} for detected",
                     f"{most['covered'][0]} ({most['covered'][1] or '-'})"))
        notes.append(f"negatives: {called} reads called viral in all, by source: {by_source or 'none'}")

    if args.oncoviruses:
        res = cached(work, "oncoviruses", lambda: naming(work, oncovirus_reads(work, None, "onco", 700), "onco", None))
        named = sum(v["named"] for v in res["per_virus"].values())
        calls = sum(v["called"] for v in res["per_virus"].values())
        rows.append((f"oncoviruses in the index: called reads named at the virus level "
                     f"({len(res['per_virus'])} viruses, {ONCO_READS} ART reads per genome)", ">= 99 %",
                     f"{100 * named / calls:.2f} % ({named:,} of {calls:,}; worst {_worst(res['per_virus'])})"))
        notes.append("oncoviruses per virus (reads, called, named, wrong): " + _per_virus(res["per_virus"]))
    if args.holdout:
        model = holdout_model(out, ROOT / args.work)

        def run_holdout() -> dict:
            fq = oncovirus_reads(work, set(HOLDOUT), "holdout", 800)
            return {"holdout": naming(work, fq, "holdout", model), "builtin": naming(work, fq, "holdout_builtin", None)}

        res = cached(work, "holdout", run_holdout)
        for key, what in (("holdout", "held out of the model copy"), ("builtin", "same reads, built-in model")):
            per = res[key]["per_virus"]
            named = sum(v["named"] for v in per.values())
            calls = sum(v["called"] for v in per.values())
            reads = sum(v["reads"] for v in per.values())
            rows.append((f"HBV genotypes A, D and HCV Tr-Kj, JK049 {what}: called reads named at the virus level",
                         ">= 99 %" if key == "holdout" else "(reference)",
                         f"{100 * named / max(calls, 1):.2f} % ({named:,} of {calls:,} called; {calls:,} of "
                         f"{reads:,} reads called; detected {res[key]['detected']})"))
            notes.append(f"hold-out ({key}) per virus (reads, called, named, wrong): " + _per_virus(per))
    for load in [float(x) for x in args.speed_loads.split(",")] if args.speed else []:
        sp = speed(work, args.speed, load)
        ratio = sp["reads_per_s"]["with"] / sp["reads_per_s"]["without"]
        rows.append((f"speed: reads/s with --report / without ({sp['reads']:,} reads, {load:g} copies of HPV16: "
                     f"{sp['viral_placed']:,} placed viral; 1 thread, faster of 2)", ">= 90 %",
                     f"{100 * ratio:.1f} % ({sp['reads_per_s']['with']:,.0f} vs {sp['reads_per_s']['without']:,.0f})"))
        notes.append(f"speed runs at {load:g} copies (s): {sp['times']}")
    size = model_size()
    model_dir = builtin_model_dir()  # outside ROOT when the benchmark runs another checkout's code
    shown = model_dir.relative_to(ROOT) if model_dir.is_relative_to(ROOT) else model_dir
    rows.append((f"built-in model folder ({shown}, as it ships)", "< 10 MB",
                 f"{size / 1e6:.2f} MB ({size:,} bytes)"))

    table = ["| measure | target | measured |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    wall = time.time() - t0
    text = "\n".join(table) + "\n\n" + "\n".join(f"- {n}" for n in notes) + \
        f"\n\n{wall:.0f} s wall for this run (samples kept in OUT/samples by an earlier run are reused, not remade); " \
        f"host {args.host_reads:,} reads of 150 bp over {HOST_SIZE:,} bp\n"
    print(text)
    (out / "results.md").write_text(f"    {' '.join([os.path.relpath(sys.executable, ROOT), *sys.argv])}\n\n" + text)


def _per_virus(per: dict) -> str:
    return "; ".join(f"{v} {d['reads']}/{d['called']}/{d['named']} {d['wrong'] or ''}" for v, d in sorted(per.items()))


def _worst(per: dict) -> str:
    v, d = min(per.items(), key=lambda kv: kv[1]["named"] / max(kv[1]["called"], 1))
    return f"{v} {100 * d['named'] / max(d['called'], 1):.1f} % of {d['called']}"


if __name__ == "__main__":
    main()
