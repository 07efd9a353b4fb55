"""Print, per command line, the request the CLI of the checkout on PYTHONPATH builds, as JSON: a
refactoring of the command line (options declared anew, renamed, moved) must build the same
requests, and so the same outputs, from the same command lines. Runs no job (execute is replaced
by a probe); a few seconds.

    PYTHONPATH=/path/to/old/checkout python scripts/request_manifest.py > before.json
    PYTHONPATH=. python scripts/request_manifest.py > after.json
    diff before.json after.json     # fields new options added, with their defaults, and nothing else

The command lines use the spellings both checkouts accept (an old spelling is accepted for a
release after a rename)."""
import dataclasses, json, os, sys
import genointerp.job as job

class Captured(Exception):
    pass

got = {}
def capture(run, req, force=False, report=None):
    got["req"] = req
    raise Captured()
job.execute = capture
from genointerp.cli import _build_app
app = _build_app()
D = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "test-data")
T = D + "/tracks"
lines = [
    ["simulate-reads", "-s", f"viral={D}/hpv4.fa", "-s", f"bact={D}/ecoli_slice.fa", "-n", "300", "--paired", "--seed", "5", "-o", "sim.fq.gz", "--truth", "sim.tsv"],
    ["simulate-reads", "-s", f"viral={D}/hpv4.fa", "-s", f"h={D}/ecoli_slice.fa", "--count", "h=10", "--count", "viral=5", "--fraction", "viral=0.1", "-o", "x.fq"],
    ["kmerize", "r.fq", "-k", "4", "--length", "50", "--label-field", "0", "--count-k", "3", "--counts", "counts.tsv", "-o", "kmers"],
    ["train-xvir", "kmers", "--epochs", "2", "--d-model", "16", "--heads", "2", "--batch-size", "64", "--seed", "3", "--device", "cpu", "-o", "xvir"],
    ["train-xvir", "-o", "m", "--viral", "v.fa", "--negative", "human=h.fa", "--mix", "viral=0.5", "--mix", "human=0.5", "--device", "cpu"],
    ["classify-reads", f"{D}/tumor_small.fq.gz", "-o", "calls.tsv", "--summary", "summary.json", "--viral-out", "viral.fq.gz"],
    ["classify-reads", "r.fq", "-m", "xvir", "-o", "calls_small.tsv", "--min-bits", "7", "--evidence", "kmer", "--device", "cpu"],
    ["classify-reads", f"{D}/tumor_small.fq.gz", "--chunk", "1/2", "-o", "c1.tsv", "--summary", "c1.json", "--reference", "ref.fa"],
    ["merge-calls", "c1.tsv", "c2.tsv", "c1.json", "c2.json", "-o", "merged.tsv", "--summary", "merged.json"],
    ["index-model", "--check"],
    ["find-integrations", "x.bam", "--host", "h.fa", "-o", "j.tsv", "--vcf", "j.vcf.gz", "--index-vcf", "--model", "m", "-t", "2"],
    ["attn-maps", "r.fq", "--max-reads", "3", "--device", "cpu", "-o", "attn_xvir"],
    ["attn-maps", "-m", "tracks", "--fasta", f"{T}/ref.fa.gz", "--region", "chr1:20480-21504", "--device", "cpu", "-o", "attn_tracks"],
    ["train-tracks", "--fasta", f"{T}/ref.fa.gz", "--targets", f"{T}/targets.tsv", "--regions", f"{T}/regions.bed", "--seq-len", "1024", "--bin-size", "32", "--target-bins", "16", "--width", "16", "--batch-size", "8", "--epochs", "2", "--seed", "2", "--device", "cpu", "-o", "tracks"],
    ["train-tracks", "--fasta", "r.fa", "--targets", "t.tsv", "--chroms", "chr1,chr2", "--valid-chroms", "chr3", "--clip", "0", "--arch", "maxpool-cnn", "--motif-init", "jaspar", "-o", "tracks_cnn"],
    ["predict-tracks", "-m", "tracks", "--fasta", f"{T}/ref.fa.gz", "--regions", f"{T}/regions.bed", "--bedgraph", "--tsv", "--device", "cpu", "-o", "pred"],
    ["predict-tracks", "--fasta", f"{D}/chr20_slice.fa.gz", "--chroms", "20", "--device", "cpu", "-o", "pred_builtin"],
    ["evaluate-tracks", "-m", "tracks", "-m", "tracks_cnn", "--fasta", f"{T}/ref.fa.gz", "--targets", f"{T}/targets.tsv", "--chroms", "chr2", "--device", "cpu", "-o", "eval.tsv"],
    ["score-variants", "v.vcf", "--fasta", "r.fa", "-o", "s.tsv", "--wide", "--center-bins", "2", "--batch-size", "16"],
    ["ism", "--fasta", "r.fa", "--regions", "r.bed", "--tracks", "a, b", "-o", "ism", "--batch-size", "32"],
    ["gene-pca", f"{D}/eur_chr21_22_small.vcf.gz", "-g", f"{D}/genes_chr21_22.bed", "-o", "genepcs", "-t", "2"],
    ["gene-pca", f"{D}/eur_chr21_22_small.vcf.gz", "--apply", "genepcs", "-o", "genepcs_applied", "--no-tsv"],
    ["capsule-train", "genepcs", "-p", "p.tsv", "--hidden", "16", "--capsule-channels", "4", "--epochs", "5", "--folds", "2", "--seed", "2", "--device", "cpu", "--train-fraction", "0.5,1", "-o", "capsule"],
    ["capsule-predict", "capsule", "genepcs_applied", "--device", "cpu", "-o", "capsule_pred.tsv"],
    ["capsule-search", "genepcs", "-p", "p.tsv", "--subset-size", "2-3", "--no-screen", "-o", "search"],
    ["versions", "--process", "X"],
]
out = {}
for argv in lines:
    got.clear()
    try:
        app(["-q", *argv], prog_name="genointerp", standalone_mode=False)
    except Captured:
        pass
    except SystemExit:
        pass
    except Exception as exc:
        out[" ".join(argv)] = f"ERROR {type(exc).__name__}: {exc}"
        continue
    req = got.get("req")
    out[" ".join(argv)] = None if req is None else {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(req).items()}
print(json.dumps(out, indent=1, default=str, sort_keys=True))
