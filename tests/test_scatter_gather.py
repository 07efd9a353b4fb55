"""classify-reads --chunk i/n and merge-calls: chunked then merged = unchunked, byte for byte.

Every test here runs under hostile arithmetic (tests/hostile.py): each model output moves with
its forward pass's row count and its row's place, so the byte-identity holds because chunked and
whole runs score every read in the same pass at the same row (genointerp.viral.classify.blocks), not
because this CPU's kernels happen to give one row the same bits in any batch.
"""

import json
import os

import pytest

from conftest import DATA, assert_one_error_line, read_fastq, run_cli, write_bam
from genointerp.viral.classify.job import HEADER
from genointerp.viral.classify.blocks import BLOCK, PASS
from genointerp.chunks import parse_chunk
from genointerp.viral.classify.scatter import chunk_range

pytestmark = pytest.mark.usefixtures("hostile_module")

OUTS = ("calls.tsv", "summary.json", "viral.fq.gz")


def classify(reads, folder, *extra):
    """classify-reads with the model run on every read (--model-all: every p_viral is written, so
    the byte-identity covers the model's outputs), its own calls otherwise; outputs in `folder`."""
    folder.mkdir()
    res = run_cli("-q", "classify-reads", reads, "--model-all", "-o", folder / OUTS[0], "--summary", folder / OUTS[1],
                  "--viral-out", folder / OUTS[2], *extra)
    assert res.exit_code == 0, res.output
    return folder


def scatter_gather(reads, n, tmp, *extra):
    """n chunk jobs, then merge-calls over their outputs; returns the merged folder."""
    jobs = [classify(reads, tmp / f"chunk{i}", "--chunk", f"{i}/{n}", *extra) for i in range(1, n + 1)]
    merged = tmp / "merged"
    merged.mkdir()
    files = [job / name for name in OUTS for job in jobs]  # all TSVs, then all summaries, then all viral reads
    res = run_cli("merge-calls", *files, "-o", merged / OUTS[0], "--summary", merged / OUTS[1], "--viral-out", merged / OUTS[2])
    assert res.exit_code == 0, res.output
    return jobs, merged


def assert_same_outputs(a, b):
    for name in OUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.fixture(scope="module")
def reads(tmp_path_factory):
    """100 reads of tumor_small (30 HPV, 10 E. coli, 60 human) and two that are not scored."""
    fq = tmp_path_factory.mktemp("reads") / "reads.fq"
    every = read_fastq(DATA / "tumor_small.fq.gz")
    by = {label: [r for r in every if r[0].startswith(label)] for label in ("viral", "bacterial", "human")}
    chosen = by["viral"][:30] + by["bacterial"][:10] + by["human"][:60]
    chosen = [chosen[(7 * j) % 100] for j in range(100)]  # mix the labels along the file
    chosen.insert(41, ("short", "ACGT" * 10, "I" * 40))
    chosen.insert(77, ("allN", "N" * 160, "I" * 160))
    fq.write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in chosen))
    return fq


@pytest.fixture(scope="module")
def whole(reads, tmp_path_factory):
    return classify(reads, tmp_path_factory.mktemp("whole") / "out")


@pytest.mark.parametrize("n", [1, 3, 7])
def test_chunked_then_merged_is_the_unchunked_run(n, reads, whole, tmp_path):
    jobs, merged = scatter_gather(reads, n, tmp_path)
    assert_same_outputs(merged, whole)
    summaries = [json.loads((job / OUTS[1]).read_text()) for job in jobs]
    assert [s["chunk"] for s in summaries] == [f"{i}/{n}" for i in range(1, n + 1)]
    assert [s["chunk_range"] for s in summaries] == [list(chunk_range(i, n, 102)) for i in range(1, n + 1)]
    assert [s["reads_total"] for s in summaries] == [b - a for a, b in (s["chunk_range"] for s in summaries)]
    # plain `cat` of the TSVs, header once, is the unchunked TSV too
    tables = [(job / OUTS[0]).read_text().splitlines(keepends=True) for job in jobs]
    assert tables[0][0] + "".join(row for t in tables for row in t[1:]) == (whole / OUTS[0]).read_text()
    # the short read (40 bp) is below the 50 bp floor; the all-N read has no seed window
    assert json.loads((whole / OUTS[1]).read_text())["status_counts"] == {"scored": 100, "model_abstained": 0,
                                                                         "too_short": 1, "ambiguous": 1}
    assert 0 < json.loads((whole / OUTS[1]).read_text())["reads_called_viral"] < 100


def test_more_chunks_than_reads_gives_empty_chunks_that_still_merge(tmp_path):
    fq = tmp_path / "five.fq"
    fq.write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in read_fastq(DATA / "tumor_small.fq.gz")[:5]))
    whole = classify(fq, tmp_path / "whole")
    jobs, merged = scatter_gather(fq, 8, tmp_path)
    assert_same_outputs(merged, whole)
    empty = [job for job in jobs if json.loads((job / OUTS[1]).read_text())["reads_total"] == 0]
    assert len(empty) == 7  # five reads are one scoring block, which one chunk takes whole
    assert all((job / OUTS[0]).read_text() == HEADER for job in empty)


def test_bam_chunks_cover_the_unmapped_only_stream(reads, tmp_path):
    # every 4th read mapped: dropped by --unmapped-only before chunking
    write_bam(tmp_path / "r.bam", read_fastq(reads)[:30], lambda i: i % 4 == 0)
    whole = classify(tmp_path / "r.bam", tmp_path / "whole", "--unmapped-only")
    assert json.loads((whole / OUTS[1]).read_text())["reads_total"] == 22
    jobs, merged = scatter_gather(tmp_path / "r.bam", 3, tmp_path, "--unmapped-only")
    assert_same_outputs(merged, whole)
    assert json.loads((jobs[2] / OUTS[1]).read_text())["input_reads_total"] == 22


@pytest.mark.parametrize("chunk", ["0/3", "4/3", "1/0", "x", "3", "-1/3", "1/3/5"])
def test_bad_chunk_values_are_usage_errors(chunk, reads, tmp_path):
    res = run_cli("classify-reads", reads, "--chunk", chunk, "-o", tmp_path / "c.tsv")
    assert res.exit_code == 2 and "--chunk" in res.stderr and not (tmp_path / "c.tsv").exists()


def test_stdin_cannot_be_chunked(reads):
    res = run_cli("classify-reads", "-", "--chunk", "1/2", input=reads.read_text())
    assert res.exit_code == 2 and "stdin" in res.stderr


def test_chunk_arithmetic_tiles_every_record_once_in_whole_blocks():
    for total in (0, 1, 5, 16, 17, 102, 1000):
        blocks = -(-total // BLOCK)
        for n in (1, 2, 3, 7, 8, 1001):
            ranges = [chunk_range(i, n, total) for i in range(1, n + 1)]
            assert ranges[0][0] == 0 and ranges[-1][1] == total
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            assert all(a % BLOCK == 0 for a, _ in ranges)  # every chunk starts on a block boundary
            sizes = [-(-(b - a) // BLOCK) for a, b in ranges]  # blocks per chunk
            assert sum(sizes) == blocks and max(sizes) - min(sizes) <= 1
    assert chunk_range(2, 7, 102) == (16, 32) and chunk_range(7, 7, 102) == (96, 102)
    assert parse_chunk("3/8") == (3, 8)


@pytest.fixture(scope="module")
def four_chunks(reads, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("four")
    return [classify(reads, tmp / f"chunk{i}", "--chunk", f"{i}/4") for i in range(1, 5)]


def test_merge_refuses_a_missing_or_repeated_chunk(four_chunks, tmp_path):
    a, b, c, d = four_chunks
    res = run_cli("merge-calls", *(j / OUTS[0] for j in (a, b, d)), *(j / OUTS[1] for j in (a, b, d)), "-o", tmp_path / "m.tsv")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, "chunks 1,2,4 of 4: chunk 3 missing")
    res = run_cli("merge-calls", *(j / OUTS[0] for j in (a, b, b, d)), *(j / OUTS[1] for j in (a, b, b, d)), "-o", tmp_path / "m.tsv")
    assert_one_error_line(res, "chunks 1,2,2,4 of 4: chunk 3 missing; chunk 2 given twice")


def test_merge_refuses_mismatched_headers_and_other_thresholds(four_chunks, tmp_path):
    a, b, c, d = four_chunks
    odd = tmp_path / "odd.tsv"
    odd.write_text((b / OUTS[0]).read_text().replace("p_viral", "score", 1))
    res = run_cli("merge-calls", a / OUTS[0], odd, c / OUTS[0], d / OUTS[0], "-o", tmp_path / "m.tsv")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, "not a classify-reads calls TSV")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads((c / OUTS[1]).read_text()), "threshold": 0.9}))
    res = run_cli("merge-calls", *(j / OUTS[0] for j in four_chunks), a / OUTS[1], b / OUTS[1], other, d / OUTS[1],
                  "-o", tmp_path / "m.tsv")
    assert_one_error_line(res, "threshold 0.9 differs")
    for key, value, message in (("evidence", "model", 'evidence "model" differs'),
                                ("kmer_index", {"k": 25}, 'kmer_index {"k": 25} differs')):
        other.write_text(json.dumps({**json.loads((c / OUTS[1]).read_text()), key: value}))
        res = run_cli("merge-calls", *(j / OUTS[0] for j in four_chunks), a / OUTS[1], b / OUTS[1], other, d / OUTS[1],
                      "-o", tmp_path / "m.tsv")
        assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
        assert_one_error_line(res, message)


def test_kmer_only_chunks_merge_into_the_whole_run(reads, tmp_path):
    """--evidence kmer skips the model: chunks must still merge byte for byte."""
    whole = classify(reads, tmp_path / "whole", "--evidence", "kmer")
    _, merged = scatter_gather(reads, 3, tmp_path, "--evidence", "kmer")
    assert_same_outputs(merged, whole)
    summary = json.loads((whole / OUTS[1]).read_text())
    assert summary["evidence"] == "kmer" and summary["evidence_counts"]["model"] == 0


def test_merge_orders_by_chunk_and_checks_pairing(four_chunks, whole, tmp_path):
    shuffled = [four_chunks[k] for k in (2, 0, 3, 1)]  # e.g. a glob that sorts chunk10 before chunk2
    res = run_cli("merge-calls", *(j / name for name in OUTS[:2] for j in shuffled), "-o", tmp_path / "m.tsv")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "m.tsv").read_bytes() == (whole / OUTS[0]).read_bytes()
    tables, summaries = [j / OUTS[0] for j in four_chunks], [j / OUTS[1] for j in four_chunks]
    summaries[0], summaries[1] = summaries[1], summaries[0]  # lists in different orders: chunk 1 has 25 reads, chunk 2 26
    res = run_cli("merge-calls", *tables, *summaries, "-o", tmp_path / "n.tsv")
    assert res.exit_code == 1 and not (tmp_path / "n.tsv").exists()
    assert_one_error_line(res, "list TSVs and summaries in the same order")
    res = run_cli("merge-calls", *tables, "--summary", tmp_path / "s.json")
    assert res.exit_code == 2 and "summary JSONs" in res.stderr


def _scores(reads, precision, batch):
    from genointerp.model_folder import load_model_dir
    from genointerp.seq.joined import encode_joined
    from genointerp.resources import builtin_model_dir
    from genointerp.viral.classify.windows import model_windows, window_scores
    from genointerp.viral.classify.model_process import scorer

    model, config = load_model_dir(builtin_model_dir(), expect="xvir")
    L, k = config["model"]["read_length"], config["model"]["k"]
    windows = model_windows(*encode_joined([r[1] for r in batch]), L, k, config["model"]["vocab_size"] > 4**k)
    return window_scores(windows, scorer(model, "cpu", precision)(windows.tokens))[0]


@pytest.mark.parametrize("precision", ["32", "bf16"])  # the folded CPU form, and the module
def test_a_block_scores_the_same_bits_in_any_batch_that_starts_on_a_block_boundary(reads, precision):
    """What chunked = unchunked rests on: reads 16-31 alone, or after block 0, or before a
    partial block, are the same passes."""
    import numpy as np

    batch = read_fastq(reads)[:40]  # all scored
    together = _scores(reads, precision, batch)
    assert np.isfinite(together).all()
    for a, b in ((16, 32), (16, 40), (0, 16)):
        alone = _scores(reads, precision, batch[a:b])
        assert alone.tobytes() == together[a:b].tobytes()


def test_the_hostile_arithmetic_changes_a_score_with_its_place(reads):
    """The fixture this module runs under bites: a block scored from another offset (as chunks
    were before scoring blocks) gets other bits, so a design slip fails the tests above."""
    batch = read_fastq(reads)[:40]
    together = _scores(reads, "32", batch)
    shifted = _scores(reads, "32", batch[5:21])
    assert (shifted != together[5:21]).any()


def test_block_rows_never_mix_blocks_in_a_pass():
    import numpy as np

    from genointerp.viral.classify.blocks import block_rows, pass_keys, pass_rows
    from genointerp.viral.classify.job import BATCH
    from genointerp.models.xvir_folded import MICRO

    assert BATCH % BLOCK == 0 and MICRO == PASS  # batches start on blocks; passes are the folded form's
    # reads 0..2 of block 0 (read 1 tiled into 3 windows), none of block 1, 17 windows of block 2
    window_read = np.array([0, 1, 1, 1, 2] + [32 + j % 16 for j in range(17)])
    rows, where = block_rows(window_read)
    assert rows.size == 3 * PASS  # block 0 padded to one pass, block 2 to two
    assert (rows[where] == np.arange(window_read.size)).all()
    for p in range(0, rows.size, PASS):
        assert len(set(window_read[rows[p:p + PASS]] // BLOCK)) == 1
    assert where[0] == 0 and where[5] == PASS  # block 2's first window opens the second pass
    assert block_rows(np.empty(0, np.int64))[0].size == 0
    # each pass's key: its block, plus its rank among the block's passes (the GPU's slot in a call)
    assert pass_keys(window_read).tolist() == [0, 2, 3] and pass_keys(np.empty(0, np.int64)).size == 0
    # each pass's real windows, the rest padding: 5 of block 0's pass, 16 and 1 of block 2's
    assert pass_rows(window_read).tolist() == [5, 16, 1] and pass_rows(np.empty(0, np.int64)).size == 0
    assert (rows[where] == np.arange(window_read.size)).all() and all(
        (where // PASS == p).sum() == n for p, n in enumerate(pass_rows(window_read)))


def test_merge_refuses_chunks_split_another_way(four_chunks, tmp_path):
    """Chunks whose ranges are not this version's block-aligned ones (an older genointerp split
    reads evenly) would not reproduce the unchunked run: refused."""
    a, b, c, d = four_chunks
    other = tmp_path / "other.json"
    summary = json.loads((b / OUTS[1]).read_text())
    other.write_text(json.dumps({**summary, "chunk_range": [25, 51]}))
    res = run_cli("merge-calls", *(j / OUTS[0] for j in four_chunks), a / OUTS[1], other, c / OUTS[1], d / OUTS[1],
                  "-o", tmp_path / "m.tsv")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, "run every chunk with one version")


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_worker_processes_and_the_model_process_give_the_unchunked_bytes(threads, reads, whole, tmp_path, monkeypatch):
    """Batches of 32 reads (two scoring blocks), so that 102 reads make four batches spread over
    the worker processes; the model in a spawned process of its own (hostile there too: the
    hostile fixture puts tests/hostile_site on its PYTHONPATH). Same bytes as one in-process run."""
    from genointerp.viral.classify import job
    from genointerp.viral.classify.model_process import ModelProcess

    monkeypatch.setattr(job, "BATCH", 2 * BLOCK)
    monkeypatch.setattr(ModelProcess, "HERE", False)
    assert_same_outputs(classify(reads, tmp_path / "out", "-t", threads), whole)
    piped = run_cli("-q", "classify-reads", "-", "--model-all", "-t", str(threads),
                    input=reads.read_text())
    assert piped.exit_code == 0 and piped.stdout == (whole / OUTS[0]).read_text()


def test_workers_share_one_aligner_built_before_they_fork(reads, whole, tmp_path, monkeypatch):
    """With job.SHARED_TYPER_WORKERS workers (two), minimap2's aligner of the references (which
    types the reads called viral) is built once, in the job's own process, before they fork: they
    share its pages rather than each building its own (65 MB) at its first viral read. Every
    aligner built, in whichever process, writes its process id; the four batches hold viral reads,
    and the workers take some (as many as asked, whatever this machine's cores)."""
    from genointerp.viral.classify import job
    from genointerp.viral.typing.placement import ViralPanel

    built = tmp_path / "built"
    made = ViralPanel.__init__

    def recorded(self, *args, **kwargs):
        with open(built, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        made(self, *args, **kwargs)

    monkeypatch.setattr(ViralPanel, "__init__", recorded)
    monkeypatch.setattr(job, "BATCH", 2 * BLOCK)
    monkeypatch.setattr(job, "usable_threads", lambda requested: requested)
    assert_same_outputs(classify(reads, tmp_path / "out", "-t", job.SHARED_TYPER_WORKERS + 1), whole)
    assert built.read_text().split() == [str(os.getpid())]


def test_a_real_pipe_into_worker_processes_ends_and_gives_the_same_bytes(reads, whole):
    """stdin as a real pipe (the test runner's stand-in has no descriptor): it is fed to htslib
    through a pipe of its own, which no forked worker may hold open, or the reading never ends."""
    import subprocess
    import sys

    from hostile import subprocess_env

    res = subprocess.run([sys.executable, "-m", "genointerp", "-q", "classify-reads", "-", "--model-all", "-t", "2"],
                         input=reads.read_bytes(), capture_output=True, timeout=120, env=subprocess_env())
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode() == (whole / OUTS[0]).read_text()


def test_a_worker_that_dies_ends_the_run_with_one_line(reads, tmp_path, monkeypatch):
    """A worker killed mid-batch (the OOM killer, a crash in a library) fails the run at once,
    with one line and no output, instead of leaving it waiting for that batch for ever."""
    import os

    from genointerp.viral.classify import job
    from genointerp.viral.classify.batch_work import EvidenceWork

    parent, real = os.getpid(), EvidenceWork.__call__

    def dies_in_a_worker(self, batch):
        if os.getpid() != parent:
            os._exit(9)
        return real(self, batch)

    monkeypatch.setattr(job, "BATCH", 2 * BLOCK)
    monkeypatch.setattr(EvidenceWork, "__call__", dies_in_a_worker)
    res = run_cli("classify-reads", reads, "-t", "2", "-o", tmp_path / "c.tsv")
    assert res.exit_code == 1 and not (tmp_path / "c.tsv").exists()
    assert_one_error_line(res, "a worker process ended before its batch was done")


def test_the_gpus_call_slots_give_chunks_the_unchunked_bytes(reads, tmp_path, monkeypatch):
    """The GPU's scorer (genointerp.viral.classify.model_process.gpu_scorer: passes in fixed slots of
    fixed-shape calls, by their block's place in the input) run on the CPU, in calls of 4 passes, with
    batches of 48 reads (3 blocks): three chunks (starting at blocks 0, 2 and 4, so not where the
    unchunked run's batches start) merged, and a run on 3 threads, give the unchunked bytes. Under
    hostile arithmetic a pass scored in another slot gets other bits, so a chunk that counted its
    blocks from its own start instead of the input's fails here (no GPU needed)."""
    from genointerp.model_folder import load_model_dir
    from genointerp.viral.classify import job, model_process

    monkeypatch.setattr(job, "BATCH", 3 * BLOCK)
    monkeypatch.setattr(model_process, "GPU_PASSES", 4)
    monkeypatch.setattr(model_process.ModelProcess, "HERE", True)
    monkeypatch.setattr(model_process, "_scorer_here", lambda path, device, precision, threads: model_process.gpu_scorer(
        load_model_dir(path, expect="xvir")[0], "cpu", "32"))
    gpu_whole = classify(reads, tmp_path / "whole")
    _, merged = scatter_gather(reads, 3, tmp_path)
    assert_same_outputs(merged, gpu_whole)
    assert_same_outputs(classify(reads, tmp_path / "threads", "-t", "3"), gpu_whole)


def test_merge_refuses_chunks_of_another_file_of_the_same_name_and_count(reads, tmp_path, monkeypatch):
    """Pipelines stage inputs by base name: chunk 1/2 of x/reads.fq and chunk 2/2 of y/reads.fq (as
    many reads) record the same path and count, so chunks are matched by the content of the whole
    input (a digest every chunk takes while it counts), not by its path."""
    every = read_fastq(DATA / "tumor_small.fq.gz")
    others = every[-102:]
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
    (tmp_path / "x" / "reads.fq").write_text(reads.read_text())
    (tmp_path / "y" / "reads.fq").write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in others))
    jobs = []
    for name, i in (("x", 1), ("y", 2)):
        monkeypatch.chdir(tmp_path / name)
        jobs.append(classify("reads.fq", tmp_path / f"{name}{i}", "--chunk", f"{i}/2"))
    monkeypatch.chdir(tmp_path)
    res = run_cli("merge-calls", *(j / name for name in OUTS for j in jobs), "-o", tmp_path / "m.tsv",
                  "--viral-out", tmp_path / "m.fq.gz")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, "a chunk of other input than")


def test_merge_takes_chunks_of_one_file_named_relative_and_absolute(reads, whole, tmp_path, monkeypatch):
    monkeypatch.chdir(reads.parent)
    a = classify(reads.name, tmp_path / "a", "--chunk", "1/2")
    b = classify(str(reads.resolve()), tmp_path / "b", "--chunk", "2/2")
    merged = tmp_path / "merged"
    merged.mkdir()
    res = run_cli("merge-calls", *(j / name for name in OUTS for j in (a, b)), "-o", merged / OUTS[0],
                  "--viral-out", merged / OUTS[2])
    assert res.exit_code == 0, res.output
    assert (merged / OUTS[0]).read_bytes() == (whole / OUTS[0]).read_bytes()


@pytest.mark.parametrize("key, value", [("reads_total", None), ("reads_called_viral", "7"), ("status_counts", [1]),
                                        ("input_reads_total", None), ("chunk", 3), ("reads_scored", 1.5),
                                        ("evidence_counts", {"model": None})])
def test_a_chunk_summary_with_a_wrong_type_is_one_line(four_chunks, tmp_path, key, value):
    a, b, c, d = four_chunks
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({**json.loads((c / OUTS[1]).read_text()), key: value}))
    res = run_cli("merge-calls", *(j / OUTS[0] for j in four_chunks), a / OUTS[1], b / OUTS[1], odd, d / OUTS[1],
                  "-o", tmp_path / "m.tsv", "--summary", tmp_path / "m.json")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, f"{odd}: ")


def test_the_input_digest_does_not_depend_on_how_the_reads_are_listed():
    from genointerp.viral.classify.scatter import count_records

    reads = [(f"r{i}", "ACGT" * (i + 1), None) for i in range(40)]
    one = count_records([reads], lambda n: None)
    assert count_records([reads[:1], reads[1:17], reads[17:]], lambda n: None) == one == (40, one[1])
    moved = reads[:5] + [("r5", "ACGA" * 6, None)] + reads[6:]  # one base of one read
    assert count_records([moved], lambda n: None)[1] != one[1]


@pytest.mark.parametrize("n", [0, 5, 2 * BLOCK, 7 * BLOCK + 3, 12 * BLOCK])
def test_steps_take_every_read_once_in_order_and_cut_the_end_finer(n):
    """classify-reads' steps: lists of `size` reads, the input's last full list and the short one
    after it as lists of `tail`, each starting on a block boundary."""
    from genointerp.viral.classify.job import steps

    got = list(steps(iter(range(n)), 4 * BLOCK, BLOCK))
    assert [r for step in got for r in step] == list(range(n))
    assert all(step[0] % BLOCK == 0 for step in got)
    full = max(n // (4 * BLOCK) - 1, 0)  # full lists before the held one
    assert [len(s) for s in got[:full]] == [4 * BLOCK] * full
    assert all(len(s) <= BLOCK for s in got[full:])
    # at_end: once, as the first of the cut lists is given (the pool then works on them as the last)
    given, ends = [], []
    for step in steps(iter(range(n)), 4 * BLOCK, BLOCK, lambda: ends.append(len(given))):
        given.append(step)
    assert ends == [full]
    # `first`: a list of that many goes first where the input holds as many; the rest as without it
    given, ends = [], []
    for step in steps(iter(range(n)), 4 * BLOCK, BLOCK, lambda: ends.append(len(given)), 2 * BLOCK):
        given.append(step)
    if n >= 2 * BLOCK:
        assert given[0] == list(range(2 * BLOCK))
        rest = list(steps(iter(range(2 * BLOCK, n)), 4 * BLOCK, BLOCK))
        assert given[1:] == rest and ends == [1 + max((n - 2 * BLOCK) // (4 * BLOCK) - 1, 0)]
    else:
        assert given == got and ends == [0]
