"""Recipe for the built-in HPV read classifier (`make default-model`). Resumable: finished steps
are skipped and training continues from its checkpoint.

Data (public; see README "Data"):
  viral     ../shared/data/viral/hpv_genomes.fa: 516 HPV genomes of 382 types; every 8th type
            (sorted by name, HPV16 and HPV18 always kept for training) is held out for evaluation.
  human     GRCh37 chr20 (Debian vt-examples); 20:1-50,000,000 for training, the rest held out.
  bacterial E. coli 536 (Debian bowtie-examples) and Klebsiella pneumoniae Kp1084 + NTUH-K2044
            (Debian kleborate-examples) for training; K. pneumoniae MGH 78578 and HS11286 held out.
Training reads: 150 bp HiSeq 2500-like (simulate-reads), half viral (a third of those from
genomes mutated with 5 % substitutions, as XVir augments), 30 % human, 20 % bacterial; then
fine-tuning stages (FINETUNE) on fresh reads with a larger human share at lower learning rates:
the first model still called too many human reads viral. Last, the model folder gets its k-mer
index (codon seeds of the training HPV genomes minus those of every training negative;
genointerp.viral.evidence.seeds), and the model's threshold is set so that the combined caller
(k-mer evidence or the model) calls at most CALIBRATION_FPR of fresh reads of each non-viral
kind viral (calibrate()).

    python scripts/build_default_model.py [--shared ../shared/data] [--reads 60000] [--epochs 8] [--device cuda]
    python scripts/build_default_model.py --stage calling   # only the installed model's index and threshold (installed if better)
    python scripts/build_default_model.py --stage fresh     # fine-tune the installed model on fresh reads

The fresh stage fine-tunes the installed model with train-xvir on reads simulated anew every epoch
from the training references (FRESH), sets its threshold with --target-fpr, and installs it only
when it beats the installed model on held-out reads (heldout_scores(): reads simulated from the
held-out HPV types, human chr20 beyond 50 Mb and the held-out K. pneumoniae). Rerun it to resume.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pysam

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # provenance.py beside this script
GI = [sys.executable, "-m", "genointerp"]
ECOLI = "/usr/share/doc/bowtie/examples/genomes/NC_008253.fna.gz"
KLEBS = "/usr/share/doc/kleborate/examples/data/{}.fna.xz"
KLEBS_TRAIN, KLEBS_HELDOUT = ["Klebs_Kp1084", "NTUH-K2044"], ["MGH78578", "Klebs_HS11286"]
HUMAN_SPLIT = 50_000_000
# Share of fresh non-viral reads (per kind) the built-in caller may call viral. The goal is 0.1 %
# on real reads (in a tumour nearly every read is human, and 0.1 % is still a thousand false viral
# reads per million), but the model calls reads with ART's empirical HiSeq errors viral about six
# times as often as simulate-reads' reads at the same threshold (at 0.99: 0.17 % of held-out human
# ART reads, 0.028 % of fresh simulate-reads reads of the training chromosome), so the threshold
# is set at a fifth of it.
CALIBRATION_FPR = 0.0002
# Fine-tuning stages after the first model: (reads, viral share, epochs, learning rate, seed); the
# non-viral rest is two thirds human, one third bacterial.
FINETUNE = [(150_000, 0.4, 2, 5e-4, 2), (200_000, 0.3, 2, 3e-4, 3)]


# Genomes of other kingdoms that contaminate tumour sequencing, from Debian example packages
# (`make default-model` installs them): (package path, records or None for all) per set, training
# and held-out. Held out are other strains of trained species and species never trained on.
DOC = "/usr/share/doc"
WIDE = {
    "bacteria_wide_train.fa": [(f"{DOC}/sibelia/examples/Sibelia/Staphylococcus_aureus/Staphylococcus.fasta.gz",
                                ["gi|150392480|ref|NC_009632.1|", "gi|29165615|ref|NC_002745.2|"]),  # S. aureus JH1, N315
                               (f"{DOC}/sibelia/examples/Sibelia/Helicobacter_pylori/Helicobacter_pylori.fasta.gz",
                                ["gi|385215269|ref|NC_017366.1|"])],  # H. pylori F32
    "fungal_train.fa": [(f"{DOC}/maffilter/examples/Umaydis/Umaydis.fasta.gz", None)],  # Ustilago maydis
    "protist_train.fa": [("/usr/share/spaln/seqdb/dictdisc_g.gf.gz", None),  # Dictyostelium discoideum AX4
                         (f"{DOC}/smalt/test/data/cigar_ref.fa.gz", None)],  # Plasmodium knowlesi contigs
    "bacteria_wide_heldout.fa": [(f"{DOC}/sibelia/examples/Sibelia/Staphylococcus_aureus/Staphylococcus.fasta.gz",
                                  ["gi|387141638|ref|NC_017331.1|", "gi|49484912|ref|NC_002953.3|"]),  # TW20, MSSA476
                                 (f"{DOC}/sibelia/examples/Sibelia/Helicobacter_pylori/Helicobacter_pylori.fasta.gz",
                                  ["gi|385218266|ref|NC_017371.1|"]),  # H. pylori Gambia94/24
                                 (f"{DOC}/smalt/test/data/sequence_test_1.fa.gz", None)],  # Streptococcus suis P1/7
    "yeast_heldout.fa": [("/var/lib/gbrowse/databases/yeast_scaffolds/chr1.fa", None),  # S. cerevisiae chrI, chrII
                         ("/var/lib/gbrowse/databases/yeast_scaffolds/chr2.fa", None)],
    "pfal_heldout.fa": [(f"{DOC}/smalt/test/data/genome_1.fa.gz", None)],  # Plasmodium falciparum 3D7
}
WIDE_PACKAGES = "sibelia-examples maffilter-examples spaln-data smalt-examples gbrowse-data"

# Fine-tuning on fresh reads (--stage fresh): reads per epoch, label weights, viral substitution
# rate (unseen strains), epochs, patience, learning rate, seed.
FRESH = {"reads": 100_000, "mix": {"viral": 0.35, "human": 0.3, "bacterial": 0.15, "fungal": 0.1, "protist": 0.1},
         "sub_rate": 0.05, "epochs": 3, "patience": 3, "lr": 2e-4, "seed": 21}
FRESH_NEGATIVES = [("human", "human_train.fa"), ("bacterial", "bacteria_train.fa"), ("bacterial", "bacteria_wide_train.fa"),
                   ("fungal", "fungal_train.fa"), ("protist", "protist_train.fa")]
HELDOUT_READS = {"unseen HPV": ("hpv_heldout.fa", 5_000, True), "human": ("human_heldout.fa", 20_000, False),
                 "K. pneumoniae": ("bacteria_heldout.fa", 5_000, False),
                 "other bacteria": ("bacteria_wide_heldout.fa", 5_000, False),
                 "yeast": ("yeast_heldout.fa", 5_000, False), "P. falciparum": ("pfal_heldout.fa", 5_000, False)}


def hpv_type(name: str) -> str:
    base = name.split("_v")[0]
    return base


def heldout_types(names: list[str]) -> set[str]:
    types = sorted({hpv_type(n) for n in names})
    return {t for i, t in enumerate(types) if i % 8 == 4 and t not in ("HPV16", "HPV18")}


def write_fasta(path: Path, records) -> None:
    with open(path, "w") as fh:
        for name, seq in records:
            fh.write(f">{name}\n" + "".join(seq[i : i + 80] + "\n" for i in range(0, len(seq), 80)))


def prepare(shared: Path, work: Path) -> None:
    """Reference FASTA files for the training and held-out sets (skipped when present)."""
    if (work / "refs.done").exists():
        return
    hpv = [(r.name, r.sequence) for r in pysam.FastxFile(str(shared / "viral/hpv_genomes.fa"))]
    held = heldout_types([n for n, _ in hpv])
    write_fasta(work / "hpv_train.fa", [(n, s) for n, s in hpv if hpv_type(n) not in held])
    write_fasta(work / "hpv_heldout.fa", [(n, s) for n, s in hpv if hpv_type(n) in held])
    chr20 = pysam.FastaFile(str(shared / "human/GRCh37.chr20.fa.gz"))
    write_fasta(work / "human_train.fa", [("20_train", chr20.fetch("20", 0, HUMAN_SPLIT))])
    write_fasta(work / "human_heldout.fa", [("20_heldout", chr20.fetch("20", HUMAN_SPLIT, chr20.get_reference_length("20")))])

    def bacterial(names):
        out = []
        for n in names:
            with lzma.open(KLEBS.format(n), "rt") as fh:
                out += [(f"{n}:{r.id}", str(r.seq)) for r in __import__("Bio.SeqIO").SeqIO.parse(fh, "fasta")]
        return out

    with gzip.open(ECOLI, "rt") as fh:
        ecoli = [("Ecoli536", "".join(line.strip() for line in fh if not line.startswith(">")))]
    write_fasta(work / "bacteria_train.fa", ecoli + bacterial(KLEBS_TRAIN))
    write_fasta(work / "bacteria_heldout.fa", bacterial(KLEBS_HELDOUT))
    (work / "heldout_types.txt").write_text("\n".join(sorted(held)) + "\n")
    (work / "refs.done").write_text("ok\n")


def prepare_wide(work: Path) -> None:
    """The fungal, protist and further bacterial references of WIDE (skipped when present)."""
    if (work / "wide.done").exists():
        return
    for name, parts in WIDE.items():
        records = []
        for path, keep in parts:
            got = {r.name: r.sequence for r in pysam.FastxFile(path)}
            records += [(n, got[n]) for n in (keep or got)]
        write_fasta(work / name, records)
    (work / "wide.done").write_text("ok\n")


def run(cmd: list[str]) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def simulate_mix(work: Path, counts: dict[str, int], seed: int, out: Path) -> None:
    """Reads from the training genomes, `counts` per label (viral, human, bacterial)."""
    if out.exists():
        return
    refs = {"viral": "hpv_train.fa", "human": "human_train.fa", "bacterial": "bacteria_train.fa"}
    sources = [a for label in counts for a in ("-s", f"{label}={work / refs[label]}")]
    run(GI + ["-q", "simulate-reads", *sources, "--circular", "viral",
              *[a for label, n in counts.items() for a in ("--count", f"{label}={n}")], "--seed", str(seed), "-o", str(out)])


def install_evidence(work: Path, model: Path) -> None:
    """The model folder's k-mer index (genointerp.viral.evidence.seeds's default seed and hits): the
    training HPV genomes (circular) minus the seeds of every training negative (FRESH_NEGATIVES)."""
    from genointerp.cli.common import REPORTER
    from genointerp.viral.evidence.seeds import KmerSettings, build_index
    from genointerp.viral.model_files import KMER_KEY

    entry = build_index(model, [str(work / "hpv_train.fa")], [str(work / ref) for _, ref in FRESH_NEGATIVES],
                        KmerSettings(), True, REPORTER)
    config = json.loads((model / "config.json").read_text())
    config[KMER_KEY] = entry
    (model / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    describe_index_sources(model)


# Every negative reference prepare() and prepare_wide() write, training and held-out: what the
# shipped evidence is built against (the benchmark builds its own from the training ones only).
ALL_NEGATIVES = ["human_train.fa", "human_heldout.fa", "bacteria_train.fa", "bacteria_heldout.fa",
                 "bacteria_wide_train.fa", "bacteria_wide_heldout.fa", "fungal_train.fa", "protist_train.fa",
                 "yeast_heldout.fa", "pfal_heldout.fa"]


def ship_evidence(shared: Path, work: Path, model: Path, leave_out: tuple[str, ...] = ()) -> None:
    """The model folder's viral indexes as users get them: seeds and proteins of every genome of
    ../shared/data/viral (all HPV genomes, the other oncoviruses), minus what every negative
    reference shares with them, and the calling rule (genointerp.viral.classify.calling's defaults, chosen on
    benchmarks/viral_calls.py's validation split). The XVir model itself is not retrained.
    `leave_out`: types whose genomes (lineages included) a benchmark's copy must not know."""
    from genointerp.cli.common import REPORTER
    from genointerp.io.sequences import read_reference
    from genointerp.viral.classify.calling import CallingRule
    from genointerp.viral.evidence.protein import ProteinSettings, build_protein_index
    from genointerp.viral.evidence.seeds import KmerSettings, build_index
    from genointerp.viral.model_files import KMER_KEY, PROTEIN_KEY, REFS_FILE, RULE_KEY

    viral = work / "viral_all.fa"
    records = [(r.name, r.sequence) for name in ("hpv_genomes.fa", "oncoviruses.fa")
               for r in pysam.FastxFile(str(shared / "viral" / name)) if hpv_type(r.name) not in leave_out]
    write_fasta(viral, records)
    negatives = [str(work / ref) for ref in ALL_NEGATIVES]
    entry = build_index(model, [str(viral)], negatives, KmerSettings(), True, REPORTER)
    protein = build_protein_index(model, read_reference(str(model / REFS_FILE)), negatives, ProteinSettings(), True,
                                  REPORTER)
    config = json.loads((model / "config.json").read_text())
    config[KMER_KEY], config[PROTEIN_KEY] = entry, protein
    config[KMER_KEY]["sources"] = {
        "viral": [f"every genome of ../shared/data/viral/hpv_genomes.fa ({sum(n.startswith('HPV') for n, _ in records)} "
                  "HPV genomes) and ../shared/data/viral/oncoviruses.fa (HBV, HCV, EBV, KSHV, HTLV-1, MCPyV)"],
        "negative": ["GRCh37 chr20 (all of it)", "E. coli 536; K. pneumoniae Kp1084, NTUH-K2044, MGH 78578, HS11286",
                     "S. aureus JH1, N315, TW20, MSSA476; H. pylori F32, Gambia94/24; Streptococcus suis P1/7",
                     "Ustilago maydis; S. cerevisiae chrI-II", "Dictyostelium discoideum AX4; Plasmodium knowlesi, P. falciparum 3D7"]}
    config["calling"][RULE_KEY] = CallingRule().as_dict()
    config["calling"]["rule"] = "evidence bits + the model's vote >= min_bits (genointerp.viral.classify.calling); " \
                                "p_viral >= threshold with --evidence model"
    (model / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    ship_descriptions(shared, model)


def ship_descriptions(shared: Path, model: Path) -> None:
    """The oncovirus genomes' descriptions (accession, genotype) beside kmer_refs.fa.gz, whose
    headers carry names only: reports name HBV_4 "HBV genotype C" (genointerp.viral.panel)."""
    from genointerp.viral.model_files import DESCRIPTIONS_FILE

    rows = []
    for line in (shared / "viral" / "oncoviruses.fa").read_text().splitlines():
        if line.startswith(">"):
            name, _, rest = line[1:].partition(" ")
            words = [w for w in rest.split() if not w.startswith(("source=", "len="))]
            rows.append(f"{name}\t{' '.join(words)}\n")
    (model / DESCRIPTIONS_FILE).write_text("# name\tdescription (from ../shared/data/viral/oncoviruses.fa)\n" + "".join(rows))
    ship_taxids(model)


TAXONOMY = Path("/usr/share/EMBOSS/data/TAXONOMY/names.dmp")  # NCBI taxonomy dump of Debian's emboss-data


def ship_taxids(model: Path, names_dmp: Path = TAXONOMY) -> None:
    """NCBI taxids of the HPV types (HPV16 -> 333760 'Human papillomavirus type 16') for the
    kraken-style report, from the taxonomy's names (scientific names first, then synonyms)."""
    import re

    from genointerp.viral.model_files import TAXIDS_FILE

    found: dict[str, tuple[int, int, str]] = {}
    pattern = re.compile(r"Human papillomavirus (?:type )?(\d+)")
    with open(names_dmp) as fh:
        for line in fh:
            parts = line.split("\t|\t")
            m = pattern.fullmatch(parts[1]) if len(parts) > 3 else None
            if m:
                rank = 0 if parts[3].startswith("scientific name") else 1
                key = (rank, int(parts[0]), parts[1])
                found[f"HPV{m.group(1)}"] = min(found.get(f"HPV{m.group(1)}", key), key)
    rows = [f"{t}\t{taxid}\t{name}\n" for t, (_, taxid, name) in sorted(found.items(), key=lambda kv: int(kv[0][3:]))]
    (model / TAXIDS_FILE).write_text("# type\tNCBI taxid\tname (emboss-data's NCBI taxonomy names.dmp)\n" + "".join(rows))


def without_machine_paths(model: Path, shared: Path, work: Path) -> None:
    """The installed config.json names its inputs as users know them, not by this machine's paths."""
    from provenance import relative_paths, shipped_roots

    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps(relative_paths(config, shipped_roots(shared, work)), indent=2) + "\n")


def describe_index_sources(model: Path) -> None:
    """The index's sources named by what they are, not by paths on the machine that built it."""
    from genointerp.viral.model_files import KMER_KEY

    config = json.loads((model / "config.json").read_text())
    negative = [f"human_train.fa: GRCh37 20:1-{HUMAN_SPLIT:,}",
                "bacteria_train.fa: E. coli 536, K. pneumoniae Kp1084 and NTUH-K2044",
                "bacteria_wide_train.fa: S. aureus JH1 and N315, H. pylori F32",
                "fungal_train.fa: Ustilago maydis", "protist_train.fa: Dictyostelium discoideum AX4, Plasmodium knowlesi"]
    config[KMER_KEY]["sources"] = {
        "viral": ["hpv_train.fa: every HPV genome of ../shared/data/viral/hpv_genomes.fa but the held-out types"],
        "negative": negative}
    (model / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def calibrate(work: Path, model: Path, threads: int) -> dict:
    """The model's calling threshold, as train-xvir --target-fpr sets it: the combined caller
    (k-mer evidence, or p_viral >= it) calls at most CALIBRATION_FPR of fresh reads of each
    non-viral kind from the training genomes viral (the fresh stage's references and seed; draws
    for calibration never overlap its training draws). In a tumour sample nearly every read is
    human, so false positives, not recall, decide whether the calls are usable; the paper's 0.5
    is far too permissive here."""
    from genointerp.model_folder import load_model_dir
    from genointerp.cli.common import REPORTER
    from genointerp.runtime import use_threads
    from genointerp.viral.evidence.seeds import load_index
    from genointerp.viral.training.fresh import FreshReads, ReadSimulator
    from genointerp.viral.training.job import calibrate_on_fresh_reads

    use_threads(threads)
    net, config = load_model_dir(model, expect="xvir")
    spec = FreshReads([str(work / "hpv_train.fa")], [(label, str(work / ref)) for label, ref in FRESH_NEGATIVES],
                      circular=True, k=int(config["tokens"]["k"]), length=int(config["tokens"]["length"]))
    return calibrate_on_fresh_reads(net, ReadSimulator(spec, FRESH["seed"], REPORTER), load_index(model, config),
                                    CALIBRATION_FPR, "cpu", "32")


def install_if_better(shared: Path, work: Path, candidate: Path, target: Path) -> None:
    """Replace the installed model by `candidate` when better() on the held-out reads."""
    old, new = heldout_scores(work, target), heldout_scores(work, candidate)
    for name, scores in (("installed", old), (candidate.name, new)):
        print(f"{name}: " + ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
    if not better(new, old):
        print(f"{candidate.name} is not better on held-out reads; the installed model stays")
        return
    shutil.rmtree(target)
    shutil.copytree(candidate, target, ignore=shutil.ignore_patterns(".genointerp"))
    shutil.copy(work / "heldout_types.txt", target / "heldout_types.txt")
    describe_index_sources(target)
    without_machine_paths(target, shared, work)
    print(f"{candidate.name} installed in {target}")


def train(work: Path, args) -> Path:
    """The first model and its fine-tuning stages (each skipped when done); returns the last."""
    n = args.reads
    plain, mutated = work / "train_plain.fq.gz", work / "train_mutated.fq.gz"
    simulate_mix(work, {"viral": n // 3, "human": int(n * 0.3), "bacterial": int(n * 0.2)}, 11, plain)
    if not mutated.exists():
        run(GI + ["-q", "simulate-reads", "-s", f"viral={work / 'hpv_train.fa'}", "--circular", "viral",
                  "-n", str(n - n // 3 - int(n * 0.3) - int(n * 0.2)), "--sub-rate", "0.05", "--seed", "12", "-o", str(mutated)])
    dataset = work / "train.kmers"
    if not dataset.exists():
        run(GI + ["-q", "kmerize", str(plain), str(mutated), "--label-field", "0", "-o", str(dataset)])
    model = work / "model"
    if not model.exists():
        resume = ["--resume"] if (work / "model.checkpoint" / "last.pt").exists() else []
        run(GI + ["train-xvir", str(dataset), "-o", str(model), "--epochs", str(args.epochs), "--patience", "3",
                  "--rc-augment", "--threads", str(args.threads), "--device", args.device, "--seed", "1"] + resume)
    # Fine-tuning stages on fresh reads at lower learning rates: the first model still called too
    # many human reads viral, so later stages see more human (and bacterial) sequence.
    for stage, (m, viral_share, epochs, lr, seed) in enumerate(FINETUNE, start=2):
        tuned = work / ("model_tuned" if stage == 2 else f"model_stage{stage}")
        if not tuned.exists():
            more = work / ("finetune.fq.gz" if stage == 2 else f"finetune{stage}.fq.gz")
            n_viral = int(m * viral_share)
            n_human = (m - n_viral) * 2 // 3
            simulate_mix(work, {"viral": n_viral, "human": n_human, "bacterial": m - n_viral - n_human}, 11 + stage, more)
            resume = ["--resume"] if (work / f"{tuned.name}.checkpoint" / "last.pt").exists() else []
            run(GI + ["train-xvir", str(more), "-o", str(tuned), "--init-from", str(model), "--epochs",
                      str(epochs), "--patience", "1", "--lr", str(lr), "--rc-augment", "--threads",
                      str(args.threads), "--device", args.device, "--seed", str(seed)] + resume)
        model = tuned
    return model


def fresh_stage(work: Path, target: Path, args) -> Path:
    """Fine-tune the installed model on fresh reads (skipped when done; resumes an interrupted run)."""
    out = work / "model_fresh"
    if not out.exists():
        f = FRESH
        resume = ["--resume"] if (work / "model_fresh.checkpoint" / "last.pt").exists() else []
        run(GI + ["train-xvir", "-o", str(out), "--init-from", str(target), "--viral", str(work / "hpv_train.fa"), "--circular",
                  *[a for label, ref in FRESH_NEGATIVES for a in ("--negative", f"{label}={work / ref}")],
                  "--reads-per-epoch", str(f["reads"]), *[a for lab, w in f["mix"].items() for a in ("--mix", f"{lab}={w}")],
                  "--viral-sub-rate", str(f["sub_rate"]), "--epochs", str(f["epochs"]), "--patience", str(f["patience"]),
                  "--lr", str(f["lr"]), "--rc-augment", "--threads", str(args.threads), "--device", args.device,
                  "--seed", str(f["seed"]), "--target-fpr", str(CALIBRATION_FPR)] + resume)
    return out


def heldout_scores(work: Path, model: Path) -> dict:
    """The model's calls on reads simulated from every held-out set (seed 77): share called viral
    per set, and the AUROC of the combined score (k-mer evidence first, then p_viral)."""
    from genointerp.train.metrics import binary_metrics

    fq = work / "heldout_eval.fq.gz"
    if not fq.exists():
        sources = [a for name, (ref, _, _) in HELDOUT_READS.items() for a in ("-s", f"{_label(name)}={work / ref}")]
        counts = [a for name, (_, n, _) in HELDOUT_READS.items() for a in ("--count", f"{_label(name)}={n}")]
        run(GI + ["-q", "simulate-reads", *sources, "--circular", "unseen_HPV", *counts, "--seed", "77", "-o", str(fq)])
    calls = work / f"heldout_{model.name}.tsv"
    run(GI + ["-q", "classify-reads", str(fq), "-m", str(model), "-o", str(calls), "--threads", "2", "--force"])
    rows = [line.split("\t") for line in calls.read_text().splitlines()[1:]]
    kind = np.array([{_label(n): n for n in HELDOUT_READS}[r[0].split("|")[0]] for r in rows])
    called = np.array([r[3] == "viral" for r in rows])
    score = np.array([(r[6] in ("kmer", "both")) + (float(r[2]) if r[2] != "NA" else 0.0) for r in rows])
    out = {name: float(called[kind == name].mean()) for name in HELDOUT_READS}
    out["auroc"] = binary_metrics((kind == "unseen HPV").astype(float), score)["auroc"]
    return out


def _label(name: str) -> str:
    """A held-out set's name as a read label (no spaces or dots)."""
    return name.replace(" ", "_").replace(".", "")


def better(new: dict, old: dict) -> bool:
    """Higher held-out AUROC, and a lower worst false-positive rate over the held-out kinds."""
    worst = lambda scores: max(v for k, v in scores.items() if k not in ("unseen HPV", "auroc"))  # noqa: E731
    return new["auroc"] > old["auroc"] and worst(new) < worst(old)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared/data"))
    ap.add_argument("--work", default=str(ROOT / "build/default-model"))
    ap.add_argument("--reads", type=int, default=60_000)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--stage", choices=["all", "calling", "fresh", "evidence", "refs"], default="all",
                    help="calling: rebuild only the installed model's k-mer index and threshold (no training); "
                         "fresh: fine-tune the installed model on fresh reads, install it if better on held-out reads; "
                         "evidence: rebuild the installed model's shipped viral indexes from every genome and negative; "
                         "refs: only write the reference sets into --work (what the benchmarks read)")
    ap.add_argument("--device", default="cpu", help="train-xvir --device: cpu, or cuda for a GPU (the way to a "
                                                      "bigger FINETUNE and a sharper model)")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    prepare(Path(args.shared), work)
    target = ROOT / "genointerp/resources/models/xvir_hpv"
    prepare_wide(work)
    if args.stage == "refs":
        return
    if args.stage == "fresh":
        install_if_better(Path(args.shared), work, fresh_stage(work, target, args), target)
        return
    if args.stage == "evidence":
        ship_evidence(Path(args.shared), work, target)
        return
    if args.stage == "all":
        model = train(work, args)
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(model, target)
        shutil.copy(work / "heldout_types.txt", target / "heldout_types.txt")
    # The index and the threshold: on the installed model in a folder of its own, installed if better
    candidate = work / "model_calling"
    if candidate.exists():
        shutil.rmtree(candidate)
    shutil.copytree(target, candidate)
    install_evidence(work, candidate)
    config = json.loads((candidate / "config.json").read_text())
    config["calling"] = calibrate(work, candidate, args.threads)
    (candidate / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if args.stage == "all":
        shutil.rmtree(target)
        shutil.copytree(candidate, target)
        without_machine_paths(target, Path(args.shared), work)
        print(f"built-in model installed in {target}")
    else:
        install_if_better(Path(args.shared), work, candidate, target)


if __name__ == "__main__":
    main()
