"""find-integrations against known truth: VIRUSBreakend's simulation protocol on 20 Mb of chr20.

Host: GRCh37 chr20:30,000,000-50,000,000 (contig `chr20_30_50Mb`). 40 insertions of 2 kb
fragments, 10 bp host deletion at each site (80 junctions), shared round robin over HPV16, HPV18,
HPV39 (left out of the references of the benchmark's copy of the built-in model, which otherwise
knows every genome of ../shared/data/viral) and HBV genotype A (HBV_2, X51970, ../shared/data/viral/oncoviruses.fa).
Paired 150 bp reads, 500 +- 100 bp fragments, E. coli reads mixed in (about 1 % of pairs).
Reads from `genointerp simulate-reads --insert` and from `art_illumina -ss HS25` (on the same
modified genome), aligned with `minimap2 -ax sr`, sorted and indexed with samtools, at 15x and
30x; also an unmapped-only BAM (`samtools view -f 4`), a BAM with SA tags (host + every viral
genome of the panel in one reference, as GRCh38.d1.vd1 BAMs are made) and paired FASTQ.
find-integrations runs with the built-in references plus oncoviruses.fa (`--viral-refs`) and the
GENCODE genes of the segment. A call is true within 1 kb on the host and 750 bp on the virus
(VIRUSBreakend's criterion) on a genome of the same virus (HPV39 calls land on relatives such as
HPV68: the truth position is lifted onto the called genome by aligning 400 bp around it with
mappy). Breakpoint precision: the share of true split-read-supported calls within 5 bp on the
host. bcftools view must accept every VCF. Time and peak memory (RSS) are find-integrations'
alone, on 2 cores (`-t 2`).

    python benchmarks/find_integrations.py --shared ../shared/data [--out bench-output/find_integrations]

Results (AMD EPYC, 2 cores; 2026-11-26; the built-in model's copy without HPV39, 557 references;
every HPV39 and HBV junction found; benchmarks/README.md "find-integrations"):

| input | depth | junctions | calls | sensitivity | FDR | split-read calls within 5 bp | time | peak RSS | reads/s |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| genointerp reads, BAM | 15x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 79 | 6 s | 500 MB | 341,601 |
| ART reads, BAM | 15x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 79 | 6 s | 500 MB | 343,285 |
| ART reads, unmapped-only BAM | 15x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 22 | 3 s | 500 MB | 8,451 |
| ART reads, host+virus BAM (SA tags) | 15x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 79 | 5 s | 548 MB | 371,494 |
| ART reads, paired FASTQ | 15x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 78 | 24 s | 607 MB | 84,641 |
| genointerp reads, BAM | 30x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 79 | 9 s | 500 MB | 439,263 |
| ART reads, BAM | 30x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 80 | 10 s | 502 MB | 414,226 |
| ART reads, unmapped-only BAM | 30x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 38 | 6 s | 502 MB | 9,371 |
| ART reads, host+virus BAM (SA tags) | 30x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 80 | 10 s | 557 MB | 416,028 |
| ART reads, paired FASTQ | 30x | 80 | 80 | 100.0 % | 0.0 % | 100.0 % of 79 | 53 s | 592 MB | 76,290 |

reads/s: records scanned (BAM) or reads screened (FASTQ) per second; the unmapped-only BAM holds
only its 55,289 unmapped records (30x). The 30x host+virus BAM has 1,269 primary records with SA tags.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pysam

sys.path.insert(0, str(Path(__file__).parent))
from common import GENOINTERP, out_dir, require, table  # noqa: E402

START, END = 30_000_000, 50_000_000
HOST = "chr20_30_50Mb"
UNSEEN_TYPE = "HPV39"  # left out of the references the benchmark's model knows
VIRAL = [("hpv_genomes.fa", "HPV16"), ("hpv_genomes.fa", "HPV18"), ("hpv_genomes.fa", UNSEEN_TYPE), ("oncoviruses.fa", "HBV_2")]


def model_without(unseen: str, shared: Path, work: Path, out: Path) -> Path:
    """A copy of the built-in model whose viral references are every genome of shared/viral but
    those of type `unseen` (made once): the shipped model knows every genome there."""
    import shutil

    from genointerp.resources import builtin_model_dir

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from build_default_model import ship_evidence

    folder = out / f"model_without_{unseen}"
    if not (folder / "done").exists():
        if not (work / "refs.done").exists() or not (work / "wide.done").exists():
            sys.exit(f"{work}: run scripts/build_default_model.py's prepare steps first (the negatives)")
        if folder.exists():
            shutil.rmtree(folder)
        shutil.copytree(builtin_model_dir(), folder)
        ship_evidence(shared, work, folder, leave_out=(unseen,))
        (folder / "done").write_text("ok\n")
    return folder
SEED = 33


def sh(cmd: str, cwd: Path) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, shell=True, cwd=cwd, executable="/bin/bash", stderr=subprocess.PIPE, text=True)
    if res.returncode:
        sys.exit(f"failed ({res.returncode}): {cmd}\n{res.stderr[-3000:]}")
    return time.perf_counter() - t0


def measured(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(seconds, peak RSS MB, stderr) of one command, its own resources (os.wait4)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{err[-3000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, err


def fasta_records(path: Path, names: set[str]) -> dict[str, tuple[str, str]]:
    out = {}
    with pysam.FastxFile(str(path)) as fh:
        for rec in fh:
            if rec.name in names:
                out[rec.name] = (rec.comment or "", rec.sequence.upper())
    return out


def prepare(shared: Path, out: Path) -> None:
    """Host segment, viral genomes, genes of the segment, the modified genome for ART."""
    if (out / "modified.fa").exists():
        return
    seq = pysam.FastaFile(str(shared / "human" / "GRCh37.chr20.fa.gz")).fetch("20", START, END).upper()
    (out / "host.fa").write_text(f">{HOST}\n" + "\n".join(seq[i:i + 80] for i in range(0, len(seq), 80)) + "\n")
    sh("samtools faidx host.fa", out)
    with open(out / "viral.fa", "w") as fh:
        for file, name in VIRAL:
            desc, s = fasta_records(shared / "viral" / file, {name})[name]
            fh.write(f">{name} {desc}\n{s}\n")
    with open(out / "genes.bed", "w") as fh:
        for line in open(shared / "genotypes" / "gencode_v28.hg19.protein_coding_genes.bed"):
            f = line.rstrip("\n").split("\t")
            if f[0] == "chr20" and int(f[1]) >= START and int(f[2]) <= END:
                fh.write(f"{HOST}\t{int(f[1]) - START}\t{int(f[2]) - START}\t{f[3]}\t{f[4]}\n")
    from genointerp.reads.insertions import InsertionPlan, apply_insertions
    from genointerp.reads.simulate import load_sources
    from genointerp.seq.alphabet import decode
    from genointerp.seq.simulate import Layout

    layout = Layout(150, True, 500, 100, max_n=7)
    plan = InsertionPlan("viral", "host", 40, 15)
    sources = load_sources([("host", str(out / "host.fa")), ("viral", str(out / "viral.fa"))], layout, {"viral"}, SEED,
                           lambda m: None)
    sources, _ = apply_insertions(sources, plan, layout, np.random.default_rng([SEED, 3]))
    c = sources["host"].contigs[0]
    mod = decode(sources["host"].padded[c.offset:c.offset + c.length]).decode()
    (out / "modified.fa").write_text(f">{HOST}\n" + "\n".join(mod[i:i + 80] for i in range(0, len(mod), 80)) + "\n")


def simulate(out: Path, depth: int, ecoli: str) -> None:
    """genointerp reads (truth.bedpe) and ART reads of the same modified genome at one depth."""
    tag = f"{depth}x"
    if not (out / f"gi_{tag}_R1.fq.gz").exists():
        pairs = int(depth * (END - START) / 300 / 100)  # E. coli: 1 % of the host's pairs
        sh(" ".join(GENOINTERP) + f" -q simulate-reads -s host=host.fa -s viral=viral.fa -s bacteria={ecoli} "
           f"--circular viral --insert viral=host --insertions 40 --depth {depth} --count bacteria={pairs} --paired "
           f"--fragment-mean 500 --fragment-sd 100 --seed {SEED} -o gi_{tag}_R1.fq.gz --output2 gi_{tag}_R2.fq.gz "
           f"--truth-bedpe truth_{tag}.bedpe", out)
    if not (out / f"art_{tag}_1.fq").exists():
        sh(f"art_illumina -ss HS25 -p -na -l 150 -f {depth} -m 500 -s 100 -rs {SEED} -i modified.fa -o art_host_{tag}_ >/dev/null", out)
        sh(f"art_illumina -ss HS25 -p -na -l 150 -f {depth * 60 // 15} -m 500 -s 100 -rs {SEED} -i {ecoli} -o art_bact_{tag}_ >/dev/null", out)
        for m in (1, 2):
            sh(f"cat art_host_{tag}_{m}.fq art_bact_{tag}_{m}.fq > art_{tag}_{m}.fq && rm art_host_{tag}_{m}.fq art_bact_{tag}_{m}.fq", out)


def align(out: Path, reads: str, ref: str, bam: str) -> float:
    if (out / bam).exists():
        return 0.0
    return sh(f"minimap2 -ax sr -t 2 {ref} {reads} 2>/dev/null | samtools sort -@ 2 -m 1G -o {bam}.tmp - "
              f"&& mv {bam}.tmp {bam} && samtools index {bam}", out)


_LIFT: dict = {}


def lift(out: Path, panel: dict, truth_contig: str, pos: int, called: str) -> int | None:
    """truth_contig:pos placed on the called genome (400 bp around it aligned with mappy)."""
    import mappy

    if truth_contig == called:
        return pos
    key = (truth_contig, pos, called)
    if key not in _LIFT:
        src, dst = panel[truth_contig], panel[called]
        window = (src * 3)[len(src) + pos - 200: len(src) + pos + 200]
        aligner = mappy.Aligner(seq=dst + dst[:1000], preset="sr", k=11, w=3, min_chain_score=15, min_dp_score=20)
        best = max(aligner.map(window), key=lambda h: h.mlen, default=None)
        if best is None:
            _LIFT[key] = None
        else:
            off = 200 - best.q_st if best.strand > 0 else best.q_en - 200
            _LIFT[key] = (best.r_st + off) % len(dst)
    return _LIFT[key]


def score(out: Path, calls_tsv: Path, truth: Path, panel: dict, virus_of) -> dict:
    from genointerp.io.junctions import read_bedpe

    t = read_bedpe(str(truth))
    lines = calls_tsv.read_text().splitlines()
    head = lines[0].split("\t")
    calls = [dict(zip(head, line.split("\t"))) for line in lines[1:]]
    matched_truth, true_calls, precise_true, precise_5 = set(), 0, 0, 0
    genomes = sorted({j.chrom2 for j in t})
    for c in calls:
        hpos, vpos = int(c["host_pos"]) - 1, int(c["viral_pos"]) - 1
        hit = None
        for i, j in enumerate(t):
            if j.chrom1 != c["host_chrom"] or abs(hpos - j.start1) > 1000 or virus_of(j.chrom2) != c["virus"]:
                continue
            lifted = lift(out, panel, j.chrom2, j.start2, c["viral_contig"])
            if lifted is None:
                continue
            length = len(panel[c["viral_contig"]])
            d = abs(vpos - lifted) % length
            if min(d, length - d) <= 750 and (hit is None or abs(hpos - j.start1) < abs(hpos - t[hit].start1)):
                hit = i
        if hit is None:
            continue
        true_calls += 1
        matched_truth.add(hit)
        if c["status"] == "precise":
            precise_true += 1
            precise_5 += abs(hpos - t[hit].start1) <= 5
    return {"junctions": len(t), "calls": len(calls), "found": len(matched_truth),
            "sensitivity": len(matched_truth) / len(t), "fdr": (len(calls) - true_calls) / len(calls) if calls else 0.0,
            "precise": precise_true,
            "by_genome": {g: f"{sum(t[i].chrom2 == g for i in matched_truth)}/{sum(j.chrom2 == g for j in t)}" for g in genomes}, "within_5bp": precise_5 / precise_true if precise_true else float("nan")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared/data")
    ap.add_argument("--out", default="bench-output/find_integrations")
    ap.add_argument("--depths", default="15,30")
    ap.add_argument("--model", default=None, help="model folder whose viral references are used (default: the "
                                                    f"built-in one with {UNSEEN_TYPE} left out of its references)")
    ap.add_argument("--work", default="build/default-model",
                    help="scripts/build_default_model.py's references (the negatives the indexes are built against)")
    args = ap.parse_args()
    require("art_illumina", "minimap2", "samtools", "bcftools")
    shared = Path(args.shared).resolve()
    out = out_dir(args.out).resolve()
    ecoli = str(Path(__file__).resolve().parent.parent / "test-data" / "ecoli_slice.fa")
    prepare(shared, out)

    from genointerp.viral.model_files import REFS_FILE
    from genointerp.viral.panel import name_reference
    from genointerp.viral.typing.placement import read_described

    def virus_of(name):
        return name_reference(name, describe.get(name, "")).virus

    model = Path(args.model).resolve() if args.model else model_without(UNSEEN_TYPE, shared, Path(args.work), out)
    known = {name for name, _, _ in read_described(str(model / REFS_FILE))}
    unseen = [name for _, name in VIRAL if name not in known and name_reference(name).type not in
              {name_reference(k).type for k in known}]
    print(f"model {model}: {len(known)} references; inserted genomes it lacks (type and all): {', '.join(unseen) or 'none'}")
    model_arg = ["--model", str(model)]
    # host + every viral genome of the panel in one reference (as GRCh38.d1.vd1), for the SA-tag BAM
    with open(out / "combined.fa.new", "w") as fh:
        fh.write((out / "host.fa").read_text())
        seen = set()
        for path in (shared / "viral" / "oncoviruses.fa", model / REFS_FILE):
            for name, desc, seq in read_described(str(path)):
                if name not in seen:
                    seen.add(name)
                    fh.write(f">{name} {desc}\n{seq}\n")
    os.replace(out / "combined.fa.new", out / "combined.fa")
    sh("samtools faidx combined.fa", out)
    panel = {n: s for n, _, s in read_described(str(out / "combined.fa")) if n != HOST}
    panel.update({n: s for n, _, s in read_described(str(out / "viral.fa"))})
    describe = {n: d for n, d, _ in read_described(str(out / "viral.fa"))}
    runs = []
    for depth in [int(d) for d in args.depths.split(",")]:
        tag = f"{depth}x"
        simulate(out, depth, ecoli)
        align(out, f"gi_{tag}_R1.fq.gz gi_{tag}_R2.fq.gz", "host.fa", f"gi_{tag}.bam")
        align(out, f"art_{tag}_1.fq art_{tag}_2.fq", "host.fa", f"art_{tag}.bam")
        if not (out / f"art_{tag}_unmapped.bam").exists():
            sh(f"samtools view -b -f 4 -o art_{tag}_unmapped.bam art_{tag}.bam && samtools index art_{tag}_unmapped.bam", out)
        align(out, f"art_{tag}_1.fq art_{tag}_2.fq", "combined.fa", f"art_{tag}_sa.bam")
        cases = [("genointerp reads, BAM", f"gi_{tag}.bam", "host.fa"),
                 ("ART reads, BAM", f"art_{tag}.bam", "host.fa"),
                 ("ART reads, unmapped-only BAM", f"art_{tag}_unmapped.bam", "host.fa"),
                 ("ART reads, host+virus BAM (SA tags)", f"art_{tag}_sa.bam", "combined.fa"),
                 ("ART reads, paired FASTQ", None, "host.fa")]
        for name, bam, ref in cases:
            stem = (bam or f"art_{tag}_fastq").replace(".bam", "")
            source = [bam] if bam else ["--reads1", f"art_{tag}_1.fq", "--reads2", f"art_{tag}_2.fq"]
            cmd = [*GENOINTERP, "find-integrations", *source, "--host", ref, "--viral-refs",
                   str(shared / "viral" / "oncoviruses.fa"), *model_arg, "--genes", "genes.bed", "-t", "2", "-o", f"{stem}.tsv",
                   "--vcf", f"{stem}.vcf", "--bedpe", f"{stem}.bedpe", "--summary", f"{stem}.json", "--force"]
            seconds, rss, err = measured(cmd, out)
            check = subprocess.run(["bcftools", "view", f"{stem}.vcf"], cwd=out, capture_output=True, text=True)
            summary = json.loads((out / f"{stem}.json").read_text())
            s = score(out, out / f"{stem}.tsv", out / f"truth_{tag}.bedpe", panel, virus_of)
            print(f"{name} {tag}: found per genome {s['by_genome']}", flush=True)
            reads = summary["reads_scanned"]
            runs.append({"input": name, "depth": tag, "junctions": s["junctions"], "calls": s["calls"],
                         "sensitivity": f"{100 * s['sensitivity']:.1f} %", "FDR": f"{100 * s['fdr']:.1f} %",
                         "split-read calls within 5 bp": f"{100 * s['within_5bp']:.1f} % of {s['precise']}",
                         "time": f"{seconds:.0f} s", "peak RSS": f"{rss:.0f} MB",
                         "reads/s": f"{reads / seconds:,.0f}",
                         "bcftools": "ok" if check.returncode == 0 and not check.stderr.strip() else check.stderr.strip()[:60]})
            print(table(runs[-1:], list(runs[-1])), flush=True)
    cols = list(runs[0])
    print("\n| " + " | ".join(cols) + " |\n| " + " | ".join("---" for _ in cols) + " |")
    for r in runs:
        print("| " + " | ".join(str(r[c]) for c in cols) + " |")
    (out / "results.json").write_text(json.dumps(runs, indent=2) + "\n")


if __name__ == "__main__":
    main()
