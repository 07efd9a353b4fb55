"""The built-in models' outputs on test-data, pinned to stored numbers.

The folded-vs-module XVir tests load the same weights into both forms, so a weight-loading mix-up
(two tensors swapped, a head zeroed) would pass them; these pins against numbers written down once
catch it, and a deliberately broken copy of each model shows that they do.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyBigWig
import pytest
import torch
from safetensors.numpy import load_file, save_file

from conftest import DATA, read_fastq
from genointerp.resources import BUILTIN_TRACKS, BUILTIN_XVIR, builtin_model_dir

# ------------------------------------------------------------------------------------------------
# PINNED NUMBERS. They are what the shipped model files compute; update them deliberately, and only
# when a built-in model is retrained (`make default-model`, `make tracks-model`): rerun the commands
# below, copy the new numbers here, and update the README's `make run` numbers (XVir) with them.
#
# XVir (genointerp/resources/models/xvir_hpv), `genointerp classify-reads test-data/tumor_small.fq.gz
# --model-all` (the README's `make run`, with every p_viral written): evidence bits and the model's
# vote (genointerp.viral.classify.calling) call 40 reads viral, all 40 HPV reads and none of the 1,960 others
# (read names start with the truth: viral|, human|, bacterial|), every one on its evidence alone.
XVIR_THRESHOLD = 0.9969
XVIR_CALLED = {"viral": 40, "other": 0}
XVIR_EVIDENCE = {"kmer": 40, "both": 0, "model": 0, "none": 1960}
# Logits (before the sigmoid) of reads chosen across the range: confident HPV, an HPV read the model
# misses, confident human and E. coli, and reads near the threshold, whose logit is
# log(0.9969 / 0.0031) = 5.7732: the two human reads scored highest (below it), an HPV read above
# it (called on both) and HPV reads below it (called on k-mers alone).
XVIR_LOGITS = {
    "viral|1785|HPV18|4475|4625|-|0": 6.766106,
    "viral|1052|HPV6|4151|4301|-|3": -0.970766,
    "human|1263|20|34527|34677|-|0": -17.025259,
    "bacterial|1358|Ecoli536_1000000|43516|43666|+|0": -11.885478,
    "human|712|20|59189|59339|-|0": 2.138795,
    "viral|651|HPV142|7328|7478|+|0": 2.138792,
    "human|784|20|89525|89675|+|0": 2.283638,
    "viral|1063|HPV16|896|1046|-|1": 1.599023,
    "human|1987|20|17654|17804|+|0": 3.091867,
    "human|444|20|15862|16012|-|1": 4.181906,
    "viral|369|HPV18|1404|1554|-|0": 4.629229,
    "viral|626|HPV6|4629|4779|-|0": 4.455694,
}
# Seed hits of those reads: a 150 bp read has 125 windows of 26 bases; the error-free reads have
# 118-124 of them in the index (the rest are low-complexity windows or seeds the negatives share),
# reads with sequencing errors (last field of the name) lose the windows that compare an erroneous
# base (18 of the 26 over each).
XVIR_KMER_HITS = {
    "viral|1785|HPV18|4475|4625|-|0": 124,
    "viral|1052|HPV6|4151|4301|-|3": 75,
    "human|1263|20|34527|34677|-|0": 0,
    "bacterial|1358|Ecoli536_1000000|43516|43666|+|0": 0,
    "human|712|20|59189|59339|-|0": 0,
    "viral|651|HPV142|7328|7478|+|0": 121,
    "human|784|20|89525|89675|+|0": 0,
    "viral|1063|HPV16|896|1046|-|1": 97,
    "human|1987|20|17654|17804|+|0": 0,
    "human|444|20|15862|16012|-|1": 0,
    "viral|369|HPV18|1404|1554|-|0": 118,
    "viral|626|HPV6|4629|4779|-|0": 121,
}
# Their evidence bits (seeds and proteins, as the TSV writes them): 0 for the human and E. coli
# reads, 60 and more for reads of genomes the index holds (re-pinned when the shipped evidence was
# rebuilt with the spaced protein seed 110110111: the viral reads' bits moved by -35 to +5, the others stayed 0;
# and when the protein bits became the stronger of exact stretches and alignments less log10(2): these
# reads' exact stretches are the stronger, so each moved by -0.30; and when reads whose codon seeds
# alone reach the line plus the model's reach, 15 bits, stopped being looked up in the proteins, whose
# bits could no longer change their call: the viral reads' bits are now their seeds' alone, 65-79).
XVIR_BITS = {
    "viral|1785|HPV18|4475|4625|-|0": 79.05,
    "viral|1052|HPV6|4151|4301|-|3": 68.90,
    "human|1263|20|34527|34677|-|0": 0.00,
    "bacterial|1358|Ecoli536_1000000|43516|43666|+|0": 0.00,
    "human|712|20|59189|59339|-|0": 0.00,
    "viral|651|HPV142|7328|7478|+|0": 73.48,
    "human|784|20|89525|89675|+|0": 0.00,
    "viral|1063|HPV16|896|1046|-|1": 68.20,
    "human|1987|20|17654|17804|+|0": 0.00,
    "human|444|20|15862|16012|-|1": 0.00,
    "viral|369|HPV18|1404|1554|-|0": 65.58,
    "viral|626|HPV6|4629|4779|-|0": 76.83,
}
# Tracks (genointerp/resources/models/tracks_dream_chr20), `genointerp predict-tracks --fasta
# test-data/chr20_slice.fa.gz --regions <20:40000-44096>`: predicted signal of five tracks at three
# 128 bp bins each (start positions): the CTCF site the model sees at 40192 and a second one at 43264,
# and bins where the other factors peak. Every pin is at least 0.05: the motif scan's read-out can
# take a bin's rate to exactly 0 (70 % of these bins and tracks), and a pin near that clip
# would test rounding, not the model.
TRACKS_REGION = ("20", 40000, 44096)
TRACKS_VALUES = {
    "MCF-7.CTCF.conservative": {40192: 1.0372295379638672, 42112: 0.1282195746898651, 43264: 0.5251237154006958},
    "A549.CTCF.conservative": {40064: 0.14657190442085266, 40192: 0.3993105888366699, 43264: 0.09970732033252716},
    "HepG2.MAX.conservative": {42112: 0.5465869307518005, 43264: 0.3551115095615387, 43648: 0.3009483516216278},
    "A549.CEBPB.conservative": {39936: 0.43891188502311707, 42112: 0.2733955383300781, 43264: 0.10817757248878479},
    "HepG2.REST.conservative": {40064: 0.12069098651409149, 42112: 0.13809221982955933, 43648: 0.1348845213651657},
}
# ------------------------------------------------------------------------------------------------

# Tolerances. float32 results move with the order in which sums are taken (GEMM kernel, batch shape,
# instruction set), not with anything else. Measured on test-data's 2,000 reads, XVir logits (range
# -19.6 to 9.1) differ by at most 2.7e-5 between the folded form, the module at batch 2,000 and at
# batch 1, natively and under ATEN_CPU_CAPABILITY=default/avx2 and MKL_ENABLE_INSTRUCTIONS=SSE4_2
# (the folded form and the module at one batch shape agree within 5e-6). 2e-4 is 1e-5 of the
# logits' +-20 span (the README's bound for the folded form, relative), 7x the largest difference seen. p_viral = sigmoid(logit)
# moves by at most p(1 - p) <= 1/4 of that (5e-5), plus 5e-7 from the TSV's six decimals: 1e-4.
LOGIT_ATOL = 2e-4
P_ATOL = 1e-4
# Evidence bits are float64 sums of a read's own letters' log frequencies: no batch shape enters,
# and they differ between machines only in their last bits; the TSV rounds them to 0.01.
BITS_ATOL = 0.011
# Track values (0 to 2.4 in this region, the pins 0.10 to 1.04) differ by at most 6.3e-6 relative
# (values >= 0.05) across the same settings (with ONEDNN_MAX_CPU_ISA=SSE41 for the motif scan's
# Conv1d), batch size 1 and 2 threads, and the bins at exactly 0 stay the same; 1e-4 is 16x that.
TRACK_RTOL = 1e-4


def truth(read_id: str) -> str:
    return "viral" if read_id.startswith("viral|") else "other"


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + np.exp(-z))


def xvir_call_misses(tsv: str, summary: dict) -> list[str]:
    """What in a classify-reads --model-all run on tumor_small.fq.gz differs from the pins (empty:
    all match)."""
    from genointerp.viral.classify.calling import CallingRule

    rule = CallingRule()
    rows = {r[0]: r for r in (line.split("\t") for line in tsv.splitlines()[1:])}
    misses = []
    called = {"viral": 0, "other": 0}
    for rid, r in rows.items():
        called[truth(rid)] += r[3] == "viral"
    if called != XVIR_CALLED or summary["reads_called_viral"] != sum(XVIR_CALLED.values()):
        misses.append(f"called viral {called}, summary {summary['reads_called_viral']}")
    if summary["evidence_counts"] != XVIR_EVIDENCE:
        misses.append(f"evidence {summary['evidence_counts']}")
    for rid, z in XVIR_LOGITS.items():
        p = float(rows[rid][2])
        if abs(p - sigmoid(z)) > P_ATOL:
            misses.append(f"{rid}: p_viral {p}, pinned {sigmoid(z):.6f}")
        if rows[rid][5] != str(XVIR_KMER_HITS[rid]):
            misses.append(f"{rid}: kmer_hits {rows[rid][5]}")
        if abs(float(rows[rid][7]) - XVIR_BITS[rid]) > BITS_ATOL:
            misses.append(f"{rid}: bits {rows[rid][7]}, pinned {XVIR_BITS[rid]}")
        bits = XVIR_BITS[rid]
        viral = rule.score(np.array([bits]), np.array([sigmoid(z)]))[0] >= rule.min_bits
        if rows[rid][3:7] != ["viral" if viral else "not_viral", "scored", str(XVIR_KMER_HITS[rid]),
                              ("kmer" if bits >= rule.min_bits else "both") if viral else "none"]:
            misses.append(f"{rid}: call {rows[rid][3:]}")
    return misses


def classify(cli, out, *model):
    res = cli("-q", "classify-reads", DATA / "tumor_small.fq.gz", *model, "--model-all", "-o", out / "calls.tsv",
              "--summary", out / "summary.json")
    assert res.exit_code == 0, res.output
    return (out / "calls.tsv").read_text(), json.loads((out / "summary.json").read_text())


def swapped_xvir(tmp_path):
    """A copy of the built-in XVir with its two LayerNorm gains swapped (same shape, so it loads)."""
    folder = tmp_path / "swapped"
    shutil.copytree(builtin_model_dir(BUILTIN_XVIR), folder)
    w = load_file(folder / "model.safetensors")
    w["layers.0.norm1.weight"], w["layers.0.norm2.weight"] = w["layers.0.norm2.weight"], w["layers.0.norm1.weight"]
    assert not np.array_equal(w["layers.0.norm1.weight"], w["layers.0.norm2.weight"])
    save_file(w, folder / "model.safetensors")
    return folder


def test_the_pins_lie_clear_of_the_threshold():
    """A near-threshold read's call follows from its pinned p_viral only if the tolerance cannot
    carry it across the threshold."""
    for z in XVIR_LOGITS.values():
        assert abs(sigmoid(z) - XVIR_THRESHOLD) > P_ATOL
    assert json.loads((builtin_model_dir(BUILTIN_XVIR) / "config.json").read_text())["calling"]["threshold"] == XVIR_THRESHOLD


def test_make_run_calls_the_pinned_reads(cli, tmp_path):
    """The README's `make run`: the default model and threshold on tumor_small.fq.gz."""
    tsv, summary = classify(cli, tmp_path)
    assert summary["threshold"] == XVIR_THRESHOLD and summary["reads_scored"] == 2000
    assert summary["rule"] == {"min_bits": 9.0, "model_weight": 2.0, "model_clip": 3.0}
    assert xvir_call_misses(tsv, summary) == []


def test_a_builtin_model_with_two_weights_swapped_misses_the_pins(cli, tmp_path):
    tsv, summary = classify(cli, tmp_path, "-m", swapped_xvir(tmp_path))
    misses = xvir_call_misses(tsv, summary)
    # the pinned p_viral values miss; make run's calls do not move: every read's evidence lies more
    # than the model's reach (6 bits) from the line, so even a broken model cannot change a call there
    assert sum("p_viral" in m for m in misses) > 3 and not any(m.startswith("called viral") for m in misses), misses


def tumor_small_tokens(read_ids: list[str] | None = None) -> torch.Tensor:
    """int64 (n, 145) 6-mer tokens of tumor_small.fq.gz's reads (all, or `read_ids` in that order).
    Every read is exactly the built-in model's 150 bp, so it is one window and p_viral = sigmoid(its logit)."""
    from genointerp.seq.alphabet import encode
    from genointerp.seq.kmers import tokenize

    seqs = {name: seq for name, seq, _ in read_fastq(DATA / "tumor_small.fq.gz")}
    assert {len(s) for s in seqs.values()} == {150}
    codes = np.stack([encode(seqs[rid]) for rid in (read_ids or seqs)])
    return torch.from_numpy(tokenize(codes, 6).astype(np.int64))


def pinned_logits(folder, form: str) -> np.ndarray:
    """Logits float64 (len(XVIR_LOGITS),) of the pinned reads, by the folded form (what
    classify-reads runs in fp32 on CPU) or the PyTorch module (bf16, CUDA, other variants)."""
    from genointerp.model_folder import load_model_dir
    from genointerp.models.xvir_fold import fold

    model, _ = load_model_dir(folder, expect="xvir")
    tokens = tumor_small_tokens(list(XVIR_LOGITS))
    if form == "folded":
        return fold(model)(tokens.numpy()).astype(np.float64)
    with torch.inference_mode():
        return model(tokens).double().numpy()


@pytest.mark.parametrize("form", ["folded", "module"])
def test_both_xvir_forms_give_the_pinned_logits(form):
    np.testing.assert_allclose(pinned_logits(builtin_model_dir(BUILTIN_XVIR), form), list(XVIR_LOGITS.values()),
                               rtol=0, atol=LOGIT_ATOL)


@pytest.mark.parametrize("form", ["folded", "module"])
def test_both_xvir_forms_of_a_swapped_model_miss_the_pinned_logits(form, tmp_path):
    got = pinned_logits(swapped_xvir(tmp_path), form)
    assert (np.abs(got - list(XVIR_LOGITS.values())) > LOGIT_ATOL).sum() >= 4


def predict_region(cli, tmp_path, *model) -> tuple[list[str], np.ndarray]:
    """(track ids, float64 (tracks, bins) of 128 bp bins from 39936) of predict-tracks over TRACKS_REGION."""
    chrom, start, end = TRACKS_REGION
    (tmp_path / "r.bed").write_text(f"{chrom}\t{start}\t{end}\n")
    res = cli("-q", "predict-tracks", "-R", DATA / "chr20_slice.fa.gz", "--regions", tmp_path / "r.bed",
              *model, "-o", tmp_path / "p", "--device", "cpu")
    assert res.exit_code == 0, res.output
    cfg = json.loads((builtin_model_dir(BUILTIN_TRACKS) / "config.json").read_text())
    ids = [t["id"] for t in cfg["tracks"]]
    assert sorted(p.name for p in (tmp_path / "p").glob("*.bw")) == sorted(f"{i}.bw" for i in ids)
    values = []
    for tid in ids:
        bw = pyBigWig.open(str(tmp_path / "p" / f"{tid}.bw"))
        assert list(bw.chroms().items()) == [("20", 100_000)]  # test-data's slice of chr20
        # the region, widened to whole 128 bp bins (39936-44160), one value per bin
        values.append(bw.values(chrom, 39936, 44160)[::128])
        bw.close()
    return ids, np.array(values, dtype=np.float64)


def track_misses(ids: list[str], values: np.ndarray) -> list[str]:
    misses = []
    for tid, pins in TRACKS_VALUES.items():
        for pos, want in pins.items():
            got = values[ids.index(tid), (pos - 39936) // 128]
            if abs(got - want) > TRACK_RTOL * abs(want):
                misses.append(f"{tid} at {pos}: {got}, pinned {want}")
    # A constant (or all-zero) model has no variance across bins and tracks; the built-in model's is
    # 0.022 here (CTCF sites 1.04 and 0.53 against 0 between them), so 1e-3 leaves a wide margin.
    if values.var() < 1e-3:
        misses.append(f"variance {values.var():.3g} across bins and tracks")
    return misses


def test_builtin_tracks_model_predicts_the_pinned_values(cli, tmp_path):
    """No -m: the built-in chr20 TF ChIP-seq model, on a slice of real GRCh37 chr20."""
    cfg = json.loads((builtin_model_dir(BUILTIN_TRACKS) / "config.json").read_text())
    assert cfg["model"]["architecture"] == "swin1d" and len(cfg["tracks"]) == 87
    assert cfg["training"]["valid_pearson"] > 0.05  # well above a constant prediction (0)
    ids, values = predict_region(cli, tmp_path)
    assert values.shape == (87, 33)
    assert track_misses(ids, values) == []


@pytest.mark.parametrize("bias", [-100.0, 0.0])  # softplus(-100) = 4e-44, i.e. zeros; softplus(0) = log 2
def test_a_tracks_model_with_a_dead_head_misses_the_pins(cli, tmp_path, bias):
    """A model whose output head ignores its input: all zeros, or the constant log 2."""
    folder = tmp_path / "dead"
    shutil.copytree(builtin_model_dir(BUILTIN_TRACKS), folder)
    w = load_file(folder / "model.safetensors")
    w["output.heads.0.weight"][:] = 0
    w["output.heads.0.bias"][:] = bias
    for name in ("output.motif_heads.0.weight", "output.motif_heads.0.bias"):  # the motif scan's read-out too
        w[name][:] = 0
    save_file(w, folder / "model.safetensors")
    ids, values = predict_region(cli, tmp_path, "-m", folder)
    np.testing.assert_allclose(values, np.log1p(np.exp(bias)), rtol=1e-6, atol=1e-30)  # the head really is dead
    misses = track_misses(ids, values)
    assert len(misses) == 16  # all 15 pinned values and the variance


def test_every_builtin_model_file_is_package_data():
    """A non-editable install (the Docker image, a wheel) carries only the package-data patterns.
    A prebuilt viral index (genointerp index-model, made at install: 76 MB) is not shipped."""
    import fnmatch
    import tomllib

    from conftest import DATA
    from genointerp.viral.model_files import INDEX_DIR

    patterns = tomllib.loads((DATA.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["genointerp.resources"]
    models = builtin_model_dir(BUILTIN_XVIR).parent
    files = [p.relative_to(models.parent).as_posix() for p in models.rglob("*") if p.is_file() and p.name != "__init__.py"
             and p.relative_to(models).parts[1] != INDEX_DIR]
    assert files and [f for f in files if not any(fnmatch.fnmatch(f, pat) for pat in patterns)] == []


def _strings(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize("name", [BUILTIN_XVIR, BUILTIN_TRACKS])
def test_shipped_configs_name_their_sources_without_machine_paths(name):
    """A user's copy must not carry the build machine's folders (scripts/provenance.py rewrites them)."""
    config = json.loads((builtin_model_dir(name) / "config.json").read_text())
    paths = [s for s in _strings(config) if s.rpartition("=")[2].startswith("/")]
    assert paths == []
    assert any(s.startswith("../shared/data/") for s in _strings(config)) or name == BUILTIN_XVIR
