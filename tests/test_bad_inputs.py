"""Bad and awkward inputs, command by command: what a pipeline throws at genointerp.

Every command that reads a user's file is run with its main input replaced by an empty file, junk
bytes, a truncated gzip file, and the same data through a named pipe; with a binary side file;
with its output naming its input; with `-o .`; and stopped by SIGTERM while it reads. A bad input
must give exactly one `genointerp: error:` line naming the user's file (never a temporary), a
non-zero exit, no traceback and nothing left in the output folder; a pipe must give the same
output as the file. (`versions` reads no input and writes stdout only, so it has no row here.)
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from conftest import DATA, assert_one_error_line, interrupt_at_call, run_cli

TRACKS = DATA / "tracks"
FASTA = TRACKS / "ref.fa.gz"
VCF = DATA / "eur_chr21_22_small.vcf.gz"
GENES = DATA / "genes_chr21_22.bed"
XVIR_SMALL = ["-k", "4", "--length", "50", "--epochs", "1", "--d-model", "16", "--heads", "2", "--batch-size", "64",
              "--seed", "3"]
TRACK_SMALL = ["--seq-len", "1024", "--bin-size", "32", "--target-bins", "16", "--width", "16", "--batch-size", "8",
               "--arch", "maxpool-cnn", "--epochs", "1", "--seed", "2", "--device", "cpu"]
CAPSULE_SMALL = ["--hidden", "8", "--capsule-channels", "2", "--capsule-dim", "4", "--kernel-size", "3",
                 "--class-dim", "4", "--epochs", "2", "--folds", "2", "--no-baselines", "--seed", "2", "--device", "cpu"]


# --- inputs shared by the table: each written once per module ------------------------------------

@pytest.fixture(scope="module")
def fx(tmp_path_factory) -> dict[str, Path]:
    """Small valid inputs of every kind (plain text, so that the table can damage them), and the
    models and intermediate outputs that later commands need."""

    d = tmp_path_factory.mktemp("inputs")
    run = lambda *a: run_cli("-q", *a)  # noqa: E731
    f: dict[str, Path] = {}
    lines = gzip.decompress((DATA / "tumor_small.fq.gz").read_bytes()).decode().splitlines(keepends=True)
    records = ["".join(lines[i:i + 4]) for i in range(0, len(lines), 4)]
    human = [r for r in records if r.startswith("@human|")]
    f["reads"] = d / "reads.fq"  # 60 human, 40 HPV and 20 E. coli reads: train-xvir needs both classes
    f["reads"].write_text("".join(human[:60] + [r for r in records if not r.startswith("@human|")]))
    f["ref"] = DATA / "hpv4.fa"
    f["targets"] = d / "targets.tsv"  # absolute track paths, so that copies elsewhere still find them
    rows = (TRACKS / "targets.tsv").read_text().splitlines()
    f["targets"].write_text("\n".join([rows[0]] + [
        "\t".join(c if i != 1 else str(TRACKS / c) for i, c in enumerate(r.split("\t"))) for r in rows[1:]]) + "\n")
    f["regions"] = d / "regions.bed"
    f["regions"].write_text("chr1\t20480\t22016\n")
    f["vcf"] = d / "small.vcf"
    f["vcf"].write_bytes(gzip.decompress(VCF.read_bytes()))
    import pysam

    with pysam.FastaFile(str(FASTA)) as fa:  # SNVs whose REF is the FASTA's, far from the contig ends
        bases = {pos: fa.fetch("chr1", pos, pos + 1).upper() for pos in (20500, 20600)}
    f["track_vcf"] = d / "variants.vcf"
    f["track_vcf"].write_text("##fileformat=VCFv4.2\n##contig=<ID=chr1,length=40000>\n"
                              "#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n" + "".join(
                                  f"chr1\t{pos + 1}\tv{pos}\t{b}\t{'A' if b != 'A' else 'C'}\t.\t.\t.\n"
                                  for pos, b in bases.items()))
    f["ism_regions"] = d / "ism.bed"
    f["ism_regions"].write_text("chr1\t20500\t20504\n")
    f["track_model"] = d / "tm"
    assert run("train-tracks", "-R", FASTA, "--targets", f["targets"], "--regions", TRACKS / "regions.bed",
               *TRACK_SMALL, "-o", f["track_model"]).exit_code == 0
    # capsule inputs: 2 Gene-PCs of 4 genes for 80 samples, one gene separating the classes
    rng = np.random.default_rng(0)
    y = np.arange(80) % 2
    x = rng.normal(size=(80, 8))
    x[:, 0] += np.where(y == 1, 3.0, -3.0)
    cols = [f"chr1:G{g}:pc{k}" for g in range(4) for k in (1, 2)]
    f["features"] = d / "features.tsv"
    f["features"].write_text("sample\t" + "\t".join(cols) + "\n" + "".join(
        f"S{i:02d}\t" + "\t".join(f"{v:.4f}" for v in x[i]) + "\n" for i in range(80)))
    f["pheno"] = d / "pheno.tsv"
    f["pheno"].write_text("sample\tstatus\n" + "".join(f"S{i:02d}\t{'case' if v else 'control'}\n" for i, v in enumerate(y)))
    f["capsule_model"] = d / "cm"
    res = run("capsule-train", f["features"], "-p", f["pheno"], "--test-fraction", "0.2", *CAPSULE_SMALL,
              "-o", f["capsule_model"])
    assert res.exit_code == 0, res.output
    f["chunk1"], f["chunk2"] = d / "c1.tsv", d / "c2.tsv"
    for i, out in ((1, f["chunk1"]), (2, f["chunk2"])):
        assert run("classify-reads", f["reads"], "--chunk", f"{i}/2", "-o", out).exit_code == 0
    return f


@dataclass
class Command:
    """One command's valid run, with its main input and its output as parameters."""

    args: Callable[[dict, str, str], list]  # (fixtures, main input, output) -> arguments
    main: str  # the fixture the main input is made from
    suffix: str  # the main input's file name ending
    output_is_folder: bool
    side: Callable[[dict, str], list] | None = None  # (fixtures, side file) -> arguments with a side file


COMMANDS: dict[str, Command] = {
    "simulate-reads": Command(lambda f, i, o: ["simulate-reads", "-s", f"viral={i}", "-n", "50", "-o", o], "ref", ".fa",
                              False),
    "kmerize": Command(lambda f, i, o: ["kmerize", i, "-k", "4", "--length", "50", "-o", o], "reads", ".fq", True,
                       side=lambda f, s: ["kmerize", f["reads"], "-k", "4", "--length", "50", "--truth", s, "-o", "out/x"]),
    "train-xvir": Command(lambda f, i, o: ["train-xvir", i, *XVIR_SMALL, "-o", o], "reads", ".fq", True),
    "classify-reads": Command(lambda f, i, o: ["classify-reads", i, "-o", o], "reads", ".fq", False),
    "merge-calls": Command(lambda f, i, o: ["merge-calls", i, f["chunk2"], "-o", o], "chunk1", ".tsv", False),
    "train-tracks": Command(lambda f, i, o: ["train-tracks", "-R", FASTA, "--targets", i, "--regions",
                                             TRACKS / "regions.bed", *TRACK_SMALL, "-o", o], "targets", ".tsv", True,
                            side=lambda f, s: ["train-tracks", "-R", FASTA, "--targets", f["targets"], "--regions",
                                               s, *TRACK_SMALL, "-o", "out/x"]),
    "predict-tracks": Command(lambda f, i, o: ["predict-tracks", "-m", f["track_model"], "-R", FASTA,
                                               "--regions", i, "--device", "cpu", "-o", o], "regions", ".bed", True),
    "evaluate-tracks": Command(lambda f, i, o: ["evaluate-tracks", "-m", f["track_model"], "-R", FASTA,
                                                "--targets", i, "--regions", f["regions"], "--device", "cpu", "-o", o],
                               "targets", ".tsv", False,
                               side=lambda f, s: ["evaluate-tracks", "-m", f["track_model"], "-R", FASTA,
                                                  "--targets", f["targets"], "--regions", s, "-o", "out/x"]),
    "score-variants": Command(lambda f, i, o: ["score-variants", i, "-m", f["track_model"], "-R", FASTA,
                                               "--device", "cpu", "-o", o], "track_vcf", ".vcf", False),
    "ism": Command(lambda f, i, o: ["ism", "-m", f["track_model"], "-R", FASTA, "--regions", i, "--device", "cpu",
                                    "-o", o], "ism_regions", ".bed", True),
    "gene-pca": Command(lambda f, i, o: ["gene-pca", i, "-g", GENES, "-o", o], "vcf", ".vcf", True,
                        side=lambda f, s: ["gene-pca", f["vcf"], "-g", GENES, "--samples", s, "-o", "out/x"]),
    "capsule-train": Command(lambda f, i, o: ["capsule-train", i, "-p", f["pheno"], *CAPSULE_SMALL, "-o", o],
                             "features", ".tsv", True,
                             side=lambda f, s: ["capsule-train", f["features"], "-p", s, *CAPSULE_SMALL, "-o", "out/x"]),
    "capsule-predict": Command(lambda f, i, o: ["capsule-predict", f["capsule_model"], i, "--device", "cpu", "-o", o],
                               "features", ".tsv", False),
    "attn-maps": Command(lambda f, i, o: ["attn-maps", i, "--max-reads", "2", "--plot-items", "0", "--device", "cpu",
                                          "-o", o], "reads", ".fq", True),
}
NAMES = list(COMMANDS)
WITH_SIDE = [n for n in NAMES if COMMANDS[n].side is not None]


def _invoke(cli, args: list):
    return cli(*[str(a) for a in args])


def _assert_failed_cleanly(res, names: str, workdir: Path) -> None:
    assert res.exit_code in (1, 2), (res.exit_code, res.output)
    assert_one_error_line(res, names)
    left = sorted(str(p.relative_to(workdir)) for p in (workdir / "out").rglob("*"))
    assert left == [], left


@pytest.fixture
def workdir(tmp_path, monkeypatch) -> Path:
    """A working folder with an empty `out/`, where each case writes `out/x`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    return tmp_path


def _bad_main(kind: str, cmd: Command, fx: dict, where: Path) -> Path:
    good = Path(fx[cmd.main]).read_bytes()
    if kind == "empty":
        path, data = where / f"empty{cmd.suffix}", b""
    elif kind == "junk":
        path, data = where / f"junk{cmd.suffix}", bytes(range(256)) * 8
    else:  # a gzip file cut in the middle of its deflate stream
        whole = gzip.compress(good, mtime=0)
        path, data = where / f"cut{cmd.suffix}.gz", whole[: len(whole) // 2]
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", ["empty", "junk", "truncated-gzip"])
@pytest.mark.parametrize("name", NAMES)
def test_a_bad_main_input_fails_with_one_line_and_leaves_nothing(name, kind, fx, cli, workdir):
    cmd = COMMANDS[name]
    bad = _bad_main(kind, cmd, fx, workdir)
    res = _invoke(cli, cmd.args(fx, bad.name, "out/x"))
    _assert_failed_cleanly(res, bad.name, workdir)


@pytest.mark.parametrize("name", WITH_SIDE)
def test_a_binary_side_file_fails_with_one_line(name, fx, cli, workdir):
    side = workdir / "side.dat"
    side.write_bytes(bytes(range(256)) * 8)
    res = _invoke(cli, COMMANDS[name].side(fx, side.name))
    _assert_failed_cleanly(res, side.name, workdir)


@pytest.mark.parametrize("name", NAMES)
def test_the_output_never_replaces_the_main_input(name, fx, cli, workdir):
    cmd = COMMANDS[name]
    mine = workdir / f"mine{cmd.suffix}"
    mine.write_bytes(Path(fx[cmd.main]).read_bytes())
    before = mine.read_bytes()
    res = _invoke(cli, cmd.args(fx, mine.name, mine.name) + ["--force"])
    assert res.exit_code == 2, res.output
    assert_one_error_line(res, "would replace the input")
    assert mine.read_bytes() == before


@pytest.mark.parametrize("name", NAMES)
def test_output_dot_is_refused_and_the_working_folder_kept(name, fx, cli, workdir):
    cmd = COMMANDS[name]
    mine = workdir / f"mine{cmd.suffix}"
    mine.write_bytes(Path(fx[cmd.main]).read_bytes())
    before = sorted(p.name for p in workdir.iterdir())
    res = _invoke(cli, cmd.args(fx, str(mine), ".") + ["--force"])
    assert res.exit_code in (1, 2), res.output
    # a folder output must not replace the working folder; a file output cannot be a folder
    assert_one_error_line(res, "holds the input" if cmd.output_is_folder else "is a folder")
    assert sorted(p.name for p in workdir.iterdir()) == before


# --- named pipes ---------------------------------------------------------------------------------

class _Feeder:
    """A named pipe in `folder` that a thread fills with `data` (or the first `stop_at` bytes,
    then holds open until `close()`), as `<(zcat x)` or a FIFO does."""

    def __init__(self, folder: Path, name: str, data: bytes, stop_at: int | None = None) -> None:
        self.path = folder / name
        os.mkfifo(self.path)
        self.data, self.stop_at = data, stop_at
        self._go = threading.Event()
        self.opened = threading.Event()  # the command has opened the pipe and got the data
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()

    def _feed(self) -> None:
        try:
            with open(self.path, "wb") as fh:  # blocks until the command opens the pipe
                fh.write(self.data[: self.stop_at])
                fh.flush()
                self.opened.set()
                if self.stop_at is not None:
                    self._go.wait(60)
        except BrokenPipeError:  # the reader stopped early: its error is what the test checks
            pass
        # A command that opens the pipe a second time would wait forever for a writer: give it
        # an empty one (EOF), so that the test fails on what the command read instead of hanging.
        while not self._go.wait(0.5):
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # ENXIO: no reader waiting
                pass

    def close(self) -> None:
        self._go.set()
        if not self.opened.is_set():  # the command never opened the pipe: let the writer's open() return
            try:
                os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))
            except OSError:
                pass
        self._thread.join(10)


def _outputs(path: Path, source: str) -> dict[str, bytes]:
    """The command's output: a file's bytes, or a folder's files (not the timing-dependent ones),
    with the input's name, which provenance fields record, replaced by INPUT."""
    if path.is_file():
        return {"": path.read_bytes()}
    skip = {"metrics.tsv", "config.json", "summary.json", "test_metrics.json", "header.json"}
    return {str(p.relative_to(path)): p.read_bytes().replace(source.encode(), b"INPUT") for p in sorted(path.rglob("*"))
            if p.is_file() and p.name not in skip and p.suffix != ".png"}


@pytest.mark.parametrize("name", NAMES)
def test_a_named_pipe_reads_like_the_file(name, fx, cli, workdir, hostile):
    """Byte-identical outputs, under hostile arithmetic (tests/hostile.py): a pipe is read in other
    pieces than a file, and that must not change any batch a model sees."""
    cmd = COMMANDS[name]
    res = _invoke(cli, cmd.args(fx, fx[cmd.main], "out/file"))
    assert res.exit_code == 0, res.output
    feeder = _Feeder(workdir, f"pipe{cmd.suffix}", Path(fx[cmd.main]).read_bytes())
    res = _invoke(cli, cmd.args(fx, feeder.path.name, "out/pipe"))
    feeder.close()
    assert res.exit_code == 0, res.output
    assert _outputs(workdir / "out" / "pipe", feeder.path.name) == _outputs(workdir / "out" / "file", str(fx[cmd.main]))


# --- SIGTERM while the main input is being read --------------------------------------------------

@pytest.mark.skipif(sys.platform != "linux", reason="named pipes and POSIX signals")
@pytest.mark.parametrize("name", NAMES)
def test_sigterm_mid_run_exits_143_and_leaves_nothing(name, fx, workdir):
    """Half the main input arrives through a pipe that then stays open: the command is mid-run
    (outputs reserved, input half read) when SIGTERM arrives, as `timeout`, SLURM and Nextflow send."""
    cmd = COMMANDS[name]
    data = Path(fx[cmd.main]).read_bytes()
    feeder = _Feeder(workdir, f"pipe{cmd.suffix}", data, stop_at=len(data) // 2)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "genointerp", *map(str, cmd.args(fx, feeder.path.name, "out/x"))],
                            cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not feeder.opened.is_set() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # let it take in what is there
        proc.send_signal(signal.SIGTERM)
        feeder.close()  # a read blocked in C returns, so Python's handler runs
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "interrupted by SIGTERM" in err, err
    assert sorted((workdir / "out").rglob("*")) == []



# --- single cases --------------------------------------------------------------------------------

@pytest.mark.parametrize("device", ["tpu", "cuda:x", "gpu"])
def test_an_unknown_device_is_a_usage_error(device, fx, cli, workdir):
    res = cli("classify-reads", fx["reads"], "--device", device, "-o", "out/c.tsv")
    assert res.exit_code == 2
    assert_one_error_line(res, f"--device {device}: expected auto, cpu, cuda or cuda:N")
    assert list((workdir / "out").iterdir()) == []


def test_resume_with_another_architecture_is_refused_in_one_line(fx, cli, workdir, monkeypatch):
    import genointerp.runtime as runtime

    args = ["train-xvir", fx["reads"], *XVIR_SMALL[:4], "--epochs", "3", "--batch-size", "64", "--seed", "3",
            "--heads", "2", "-o", "out/m"]
    restore = interrupt_at_call(monkeypatch, runtime, "predict_proba", 2)  # at the second validation
    assert cli(*args, "--d-model", "16").exit_code != 0
    assert (workdir / "out" / "m.checkpoint" / "last.pt").exists()
    restore()
    # --heads 4 keeps every weight's shape: only the recorded architecture tells the runs apart
    for other in (["--d-model", "32"], ["--d-model", "16", "--heads", "4"]):
        res = cli(*args, *other, "--resume")
        errors = [line for line in res.stderr.splitlines() if line.startswith("genointerp: error:")]
        assert res.exit_code == 1 and "Traceback" not in res.output, res.output
        assert len(errors) == 1 and "the interrupted run trained another architecture" in errors[0]
        assert (workdir / "out" / "m.checkpoint" / "last.pt").exists()  # still there to resume properly
    assert cli(*args, "--d-model", "16", "--resume").exit_code == 0


def test_a_track_without_signal_in_the_validation_windows_still_trains(fx, cli, workdir):
    """Pearson r of a track that is zero on every validation bin is undefined (NaN): the run keeps
    the first epoch's model instead of ending with 'no epoch was trained'."""
    (workdir / "sparse.bed").write_text("".join(f"chr1\t{s}\t{s + 200}\n" for s in range(2000, 40000, 3000)))
    (workdir / "t.tsv").write_text("id\tpath\tgroup\nsparse\tsparse.bed\tChIP\n")  # chr1 only; chr2 validates
    res = cli("train-tracks", "-R", FASTA, "--targets", "t.tsv", "--regions", TRACKS / "regions.bed",
              *TRACK_SMALL, "-o", "out/m")
    assert res.exit_code == 0, res.output
    assert (workdir / "out" / "m" / "model.safetensors").exists()


def test_balance_with_every_label_fixed_by_fraction_is_refused(cli, workdir):
    res = cli("simulate-reads", "-s", f"viral={DATA / 'hpv4.fa'}", "-s", f"bact={DATA / 'ecoli_slice.fa'}", "-n", 10,
              "--fraction", "viral=0.5", "--fraction", "bact=0.5", "--balance", "-o", "out/r.fq")
    assert res.exit_code == 1
    assert_one_error_line(res, "nothing to balance")


def test_gzipped_targets_and_regions_read_like_plain_ones(fx, cli, workdir):
    (workdir / "t.tsv.gz").write_bytes(gzip.compress(fx["targets"].read_bytes()))
    (workdir / "r.bed.gz").write_bytes(gzip.compress(fx["regions"].read_bytes()))
    for targets, regions, out in ((fx["targets"], fx["regions"], "plain.tsv"), ("t.tsv.gz", "r.bed.gz", "gz.tsv")):
        res = cli("evaluate-tracks", "-m", fx["track_model"], "-R", FASTA, "--targets", targets, "--regions",
                  regions, "--device", "cpu", "-o", f"out/{out}")
        assert res.exit_code == 0, res.output
    assert (workdir / "out" / "gz.tsv").read_bytes() == (workdir / "out" / "plain.tsv").read_bytes()


def test_a_reference_through_a_pipe_is_refused_in_one_line(fx, cli, workdir):
    feeder = _Feeder(workdir, "ref.fa", gzip.decompress(FASTA.read_bytes()))
    res = cli("predict-tracks", "-m", fx["track_model"], "-R", feeder.path.name, "--regions", fx["regions"],
              "--device", "cpu", "-o", "out/p")
    feeder.close()
    assert res.exit_code == 1
    assert_one_error_line(res, "ref.fa: a pipe or stdin cannot be indexed")


def test_usage_errors_are_one_line_when_stderr_is_not_a_terminal(cli):
    for args, message in ((["no-such-command"], "No such command"),
                          (["kmerize", "x.fq", "--length", "0", "-o", "d"], "genointerp: error: --length: "),
                          (["kmerize"], "Missing argument")):
        res = cli(*args)
        assert res.exit_code == 2
        assert_one_error_line(res, message)
        assert "╭" not in res.stderr and "Usage:" not in res.stderr


@pytest.mark.parametrize("name", ["kmerize", "train-xvir", "classify-reads", "attn-maps"])
def test_a_zero_length_read_is_a_read_not_an_error(name, fx, cli, workdir):
    """Adapter trimming leaves reads of length 0: they are counted as too short, never a failure."""
    cmd = COMMANDS[name]
    mine = workdir / "trimmed.fq"
    mine.write_text("@trimmed_to_nothing\n\n+\n\n" + fx["reads"].read_text())
    res = _invoke(cli, cmd.args(fx, mine.name, "out/x"))
    assert res.exit_code == 0, res.output
    if name == "classify-reads":
        row = (workdir / "out" / "x").read_text().splitlines()[1].split("\t")
        assert row[0] == "trimmed_to_nothing" and "too_short" in row, row


@pytest.mark.parametrize("name", NAMES)
def test_an_existing_output_is_refused_before_the_input_is_read(name, fx, cli, workdir):
    """Outputs are checked before any work (issue 39, 13): a run into an existing output fails on
    that, not on its (here junk) main input, which it would only reach after minutes or hours."""
    cmd = COMMANDS[name]
    bad = _bad_main("junk", cmd, fx, workdir)
    existing = workdir / "out" / "x"
    existing.mkdir() if cmd.output_is_folder else existing.write_text("mine\n")
    res = _invoke(cli, cmd.args(fx, bad.name, "out/x"))
    assert res.exit_code == 1, res.output
    assert_one_error_line(res, "out/x: output exists")
