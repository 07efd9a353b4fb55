"""What --force may replace, outputs of failed runs, and SIGTERM/SIGINT: nothing the user gave is lost,
and a run that does not finish leaves nothing behind (except a training checkpoint of finished epochs)."""

from __future__ import annotations

import gzip
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DATA, assert_one_error_line

READS = DATA / "tumor_small.fq.gz"
GENES = DATA / "genes_chr21_22.bed"
VCF = DATA / "eur_chr21_22_small.vcf.gz"


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".genointerp-tmp-*"))


@pytest.fixture
def reads(tmp_path) -> Path:
    """A plain FASTQ copy of the bundled reads (2,000 reads of 150 bp)."""
    path = tmp_path / "ok.fq"
    path.write_bytes(gzip.decompress(READS.read_bytes()))
    return path


# --- --force never deletes what genointerp did not write -----------------------------------------

@pytest.mark.parametrize("command", [
    lambda fq: ["kmerize", fq, "-k", "3", "--length", "50", "-o", ".", "--force"],
    lambda fq: ["gene-pca", VCF, "-g", GENES, "-o", ".", "--force"],
], ids=["kmerize", "gene-pca"])
def test_output_dot_with_force_keeps_the_working_folder(cli, reads, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("mine\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    res = cli(*command(reads.name))
    assert res.exit_code == 2
    assert_one_error_line(res, "choose another name") if command(reads.name)[0] == "kmerize" else \
        assert_one_error_line(res, "refusing to replace")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "notes.txt").read_text() == "mine\n"


def test_force_refuses_a_folder_genointerp_did_not_write(cli, reads, tmp_path):
    mine = tmp_path / "results"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work\n")
    res = cli("kmerize", reads, "-k", "3", "--length", "50", "-o", mine, "--force")
    assert res.exit_code == 1
    assert_one_error_line(res, "was not written by genointerp")
    assert (mine / "thesis.tex").read_text() == "years of work\n" and leftovers(tmp_path) == []


def test_force_replaces_a_folder_genointerp_wrote(cli, reads, tmp_path):
    out = tmp_path / "ds"
    assert cli("kmerize", reads, "-k", "3", "--length", "50", "-o", out).exit_code == 0
    assert (out / ".genointerp").is_file()
    (out / "stale.txt").write_text("from an old run\n")
    assert cli("kmerize", reads, "-k", "3", "--length", "50", "-o", out).exit_code == 1  # not without --force
    res = cli("kmerize", reads, "-k", "4", "--length", "50", "-o", out, "--force")
    assert res.exit_code == 0, res.output
    assert not (out / "stale.txt").exists() and (out / "header.json").is_file()  # replaced whole, not merged
    assert '"k": 4' in (out / "header.json").read_text()
    assert leftovers(tmp_path) == []


def test_force_never_lets_a_file_output_replace_its_input(cli, reads, tmp_path):
    before = reads.read_bytes()
    res = cli("classify-reads", reads, "-o", reads, "--force")
    assert res.exit_code == 2
    assert_one_error_line(res, "output would replace the input")
    assert reads.read_bytes() == before


def test_force_never_lets_an_input_be_replaced_through_another_name(cli, reads, tmp_path):
    (tmp_path / "link.fq").symlink_to(reads)
    before = reads.read_bytes()
    res = cli("kmerize", reads, "-k", "3", "--length", "50", "--tsv", tmp_path / "link.fq", "--force")
    assert res.exit_code == 2
    assert_one_error_line(res, "output would replace the input")
    assert reads.read_bytes() == before


def test_force_never_lets_a_folder_output_replace_its_input_dataset(cli, reads, tmp_path):
    ds = tmp_path / "ds"
    assert cli("-q", "kmerize", reads, "--label-field", "0", "-k", "3", "--length", "50", "-o", ds).exit_code == 0
    before = (ds / "tokens.npy").read_bytes()
    res = cli("train-xvir", ds, "-o", ds, "--force", "--epochs", "1", "--d-model", "8", "--heads", "1")
    assert res.exit_code == 2
    assert_one_error_line(res, "output would replace the input")
    assert (ds / "tokens.npy").read_bytes() == before
    assert not (tmp_path / "ds.checkpoint").exists()


def test_a_symlinked_output_is_written_through(cli, reads, tmp_path):
    target = tmp_path / "real.tsv"
    target.write_text("old\n")
    link = tmp_path / "calls.tsv"
    link.symlink_to(target.name)
    res = cli("kmerize", reads, "-k", "3", "--length", "50", "--tsv", link, "--force")
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and target.read_text().startswith("read_id\tlabel\ttokens\n")


def test_folder_output_to_stdout_is_a_usage_error(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = cli("gene-pca", VCF, "-g", GENES, "-o", "-")
    assert res.exit_code == 2
    assert_one_error_line(res, "cannot go to stdout")
    assert not (tmp_path / "-").exists()


def test_streams_opens_the_given_outputs_gzip_by_name_and_plain_on_request(tmp_path, capsysbinary):
    from genointerp.io.atomic import AtomicOutputs

    gz, plain, text = str(tmp_path / "a.tsv.gz"), str(tmp_path / "s.json.gz"), str(tmp_path / "b.tsv")
    with AtomicOutputs() as outputs, outputs.streams(gz, None, plain, text, "-", plain=[plain, None]) as out:
        assert sorted(out) == sorted([gz, plain, text, "-"])  # an option not given (None) is skipped
        for fh in out.values():
            fh.write(b"x\n")
        assert leftovers(tmp_path) and not Path(gz).exists()  # written to temporaries until the end
    assert gzip.decompress(Path(gz).read_bytes()) == b"x\n"
    assert Path(plain).read_bytes() == Path(text).read_bytes() == b"x\n"
    assert capsysbinary.readouterr().out == b"x\n" and leftovers(tmp_path) == []


def test_streams_takes_stdout_once():
    from genointerp.errors import UsageError
    from genointerp.io.atomic import AtomicOutputs

    with pytest.raises(UsageError, match="only one output can be - "):
        with AtomicOutputs() as outputs, outputs.streams("-", None, "-"):
            pass


# --- failed runs leave nothing ------------------------------------------------------------------

def test_a_file_output_never_replaces_a_folder_and_nothing_is_committed(cli, reads, tmp_path):
    (tmp_path / "summary").mkdir()
    res = cli("classify-reads", reads, "-o", tmp_path / "calls.tsv", "--summary", tmp_path / "summary", "--force")
    assert res.exit_code == 1
    assert_one_error_line(res, "is a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.fq", "summary"]


@pytest.mark.parametrize("command", ["train-xvir", "train-tracks"])
def test_refused_training_runs_leave_no_checkpoint_folder(cli, tmp_path, command):
    out = tmp_path / "m"
    out.mkdir()  # "output exists"
    args = [tmp_path / "missing.kmers"] if command == "train-xvir" else \
        ["-R", DATA / "tracks" / "ref.fa.gz", "--targets", DATA / "tracks" / "targets.tsv"]
    res = cli(command, *args, "-o", out)
    assert res.exit_code == 1
    assert_one_error_line(res, "output exists")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    res = cli(command, *args, "-o", tmp_path / "m2", "--epochs", "1", "--seq-len", "100000") if command == "train-tracks" \
        else cli(command, *args, "-o", tmp_path / "m2")
    assert res.exit_code in (1, 2)  # a data error after the checks: still nothing left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


# --- signals ------------------------------------------------------------------------------------

def _interrupt_when(cmd: list, cwd: Path, ready, signum=signal.SIGTERM, timeout=120.0) -> subprocess.CompletedProcess:
    """Run genointerp in a subprocess, send `signum` once ready() holds, and return how it ended."""
    proc = subprocess.Popen([sys.executable, "-m", "genointerp", *map(str, cmd)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be interrupted: make the input larger"
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_run_removes_temporaries_and_exits_128_plus_n(tmp_path, signum):
    big = tmp_path / "big.fq"
    one = gzip.decompress(READS.read_bytes())
    big.write_bytes(one * 20)  # 40,000 reads: about 30 s on one thread, interrupted after the first batch
    out = tmp_path / "out"
    out.mkdir()
    started = lambda: any(p.stat().st_size > 0 for p in out.glob(".genointerp-tmp-*calls.tsv"))  # noqa: E731
    res = _interrupt_when(["classify-reads", big, "-o", out / "calls.tsv", "--summary", out / "s.json",
                           "--viral-out", out / "v.fq.gz"], tmp_path, started, signum)
    assert res.returncode == 128 + signum, res.stderr
    assert "Traceback" not in res.stderr and f"interrupted by {signal.Signals(signum).name}" in res.stderr
    assert list(out.iterdir()) == []


def test_sigterm_keeps_finished_epochs_and_resume_leaves_no_temporaries(tmp_path):
    reads = tmp_path / "r.fq"
    reads.write_bytes(gzip.decompress(READS.read_bytes()) * 10)  # 20,000 reads: a few seconds per epoch
    common = ["--label-field", "0", "-k", "3", "--length", "50", "--d-model", "8", "--heads", "1", "--seed", "1",
              "--batch-size", "64", "--patience", "50", "--epochs", "4", "-o", tmp_path / "m"]
    ckpt = tmp_path / "m.checkpoint"
    res = _interrupt_when(["-q", "train-xvir", reads, *common], tmp_path, lambda: (ckpt / "last.pt").exists())
    assert res.returncode == 143, res.stderr
    assert "--resume" in res.stderr and (ckpt / "last.pt").exists()
    assert leftovers(tmp_path) == [] and not (tmp_path / "m").exists()
    res = subprocess.run([sys.executable, "-m", "genointerp", "-q", "train-xvir", reads, *map(str, common), "--resume"], capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m", "r.fq"]  # checkpoint gone, no temporaries


def test_sigterm_during_predict_tracks_leaves_nothing(tmp_path):
    started = lambda: any(tmp_path.glob(".genointerp-tmp-*pred"))  # noqa: E731
    # the built-in model over the synthetic genome, windows one bin apart: many seconds of work
    res = _interrupt_when(["predict-tracks", "-R", DATA / "tracks" / "ref.fa.gz", "--chroms", "chr1,chr2",
                           "--overlap-bins", "15", "--batch-size", "1", "-o", tmp_path / "pred"], tmp_path, started)
    assert res.returncode == 143, res.stderr
    assert list(tmp_path.iterdir()) == []
