"""classify-reads --chunk i/n and merge-calls: chunked then merged = unchunked, byte for byte."""

import json

import pytest
from typer.testing import CliRunner

from conftest import DATA, assert_one_error_line, read_fastq, write_bam
from genointerp.cli import app
from genointerp.viral.classify import HEADER
from genointerp.viral.scatter import chunk_range, parse_chunk

OUTS = ("calls.tsv", "summary.json", "viral.fq.gz")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def classify(reads, folder, *extra):
    """classify-reads at threshold 0.5 (so a few reads are called viral); outputs in `folder`."""
    folder.mkdir()
    res = run("-q", "classify-reads", reads, "--threshold", 0.5, "-o", folder / OUTS[0], "--summary", folder / OUTS[1],
              "--viral-out", folder / OUTS[2], *extra)
    assert res.exit_code == 0, res.output
    return folder


def scatter_gather(reads, n, tmp, *extra):
    """n chunk jobs, then merge-calls over their outputs; returns the merged folder."""
    jobs = [classify(reads, tmp / f"chunk{i}", "--chunk", f"{i}/{n}", *extra) for i in range(1, n + 1)]
    merged = tmp / "merged"
    merged.mkdir()
    files = [job / name for name in OUTS for job in jobs]  # all TSVs, then all summaries, then all viral reads
    res = run("merge-calls", *files, "-o", merged / OUTS[0], "--summary", merged / OUTS[1], "--viral-out", merged / OUTS[2])
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
    assert json.loads((whole / OUTS[1]).read_text())["status_counts"] == {"scored": 100, "too_short": 1, "ambiguous": 1}
    assert 0 < json.loads((whole / OUTS[1]).read_text())["reads_called_viral"] < 100


def test_more_chunks_than_reads_gives_empty_chunks_that_still_merge(tmp_path):
    fq = tmp_path / "five.fq"
    fq.write_text("".join(f"@{n}\n{s}\n+\n{q}\n" for n, s, q in read_fastq(DATA / "tumor_small.fq.gz")[:5]))
    whole = classify(fq, tmp_path / "whole")
    jobs, merged = scatter_gather(fq, 8, tmp_path)
    assert_same_outputs(merged, whole)
    empty = [job for job in jobs if json.loads((job / OUTS[1]).read_text())["reads_total"] == 0]
    assert len(empty) == 3
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
    res = run("classify-reads", reads, "--chunk", chunk, "-o", tmp_path / "c.tsv")
    assert res.exit_code == 2 and "--chunk" in res.stderr and not (tmp_path / "c.tsv").exists()


def test_stdin_cannot_be_chunked(reads):
    res = CliRunner().invoke(app, ["classify-reads", "-", "--chunk", "1/2"], input=reads.read_text())
    assert res.exit_code == 2 and "stdin" in res.stderr


def test_chunk_arithmetic_tiles_every_record_once():
    for total in (0, 1, 5, 102, 1000):
        for n in (1, 2, 3, 7, 8, 1001):
            ranges = [chunk_range(i, n, total) for i in range(1, n + 1)]
            assert ranges[0][0] == 0 and ranges[-1][1] == total
            assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
            assert max(b - a for a, b in ranges) - min(b - a for a, b in ranges) <= 1
    assert parse_chunk("3/8") == (3, 8)


@pytest.fixture(scope="module")
def four_chunks(reads, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("four")
    return [classify(reads, tmp / f"chunk{i}", "--chunk", f"{i}/4") for i in range(1, 5)]


def test_merge_refuses_a_missing_or_repeated_chunk(four_chunks, tmp_path):
    a, b, c, d = four_chunks
    res = run("merge-calls", *(j / OUTS[0] for j in (a, b, d)), *(j / OUTS[1] for j in (a, b, d)), "-o", tmp_path / "m.tsv")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, "chunks 1,2,4 of 4: chunk 3 missing")
    res = run("merge-calls", *(j / OUTS[0] for j in (a, b, b, d)), *(j / OUTS[1] for j in (a, b, b, d)), "-o", tmp_path / "m.tsv")
    assert_one_error_line(res, "chunks 1,2,2,4 of 4: chunk 3 missing; chunk 2 given twice")


def test_merge_refuses_mismatched_headers_and_other_thresholds(four_chunks, tmp_path):
    a, b, c, d = four_chunks
    odd = tmp_path / "odd.tsv"
    odd.write_text((b / OUTS[0]).read_text().replace("p_viral", "score", 1))
    res = run("merge-calls", a / OUTS[0], odd, c / OUTS[0], d / OUTS[0], "-o", tmp_path / "m.tsv")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, "not a classify-reads calls TSV")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads((c / OUTS[1]).read_text()), "threshold": 0.9}))
    res = run("merge-calls", *(j / OUTS[0] for j in four_chunks), a / OUTS[1], b / OUTS[1], other, d / OUTS[1],
              "-o", tmp_path / "m.tsv")
    assert_one_error_line(res, "threshold 0.9 differs")
    for key, value, message in (("evidence", "model", 'evidence "model" differs'),
                                ("kmer_index", {"k": 25}, 'kmer_index {"k": 25} differs')):
        other.write_text(json.dumps({**json.loads((c / OUTS[1]).read_text()), key: value}))
        res = run("merge-calls", *(j / OUTS[0] for j in four_chunks), a / OUTS[1], b / OUTS[1], other, d / OUTS[1],
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
    res = run("merge-calls", *(j / name for name in OUTS[:2] for j in shuffled), "-o", tmp_path / "m.tsv")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "m.tsv").read_bytes() == (whole / OUTS[0]).read_bytes()
    tables, summaries = [j / OUTS[0] for j in four_chunks], [j / OUTS[1] for j in four_chunks]
    summaries[0], summaries[1] = summaries[1], summaries[0]  # lists in different orders: chunk 1 has 25 reads, chunk 2 26
    res = run("merge-calls", *tables, *summaries, "-o", tmp_path / "n.tsv")
    assert res.exit_code == 1 and not (tmp_path / "n.tsv").exists()
    assert_one_error_line(res, "list TSVs and summaries in the same order")
    res = run("merge-calls", *tables, "--summary", tmp_path / "s.json")
    assert res.exit_code == 2 and "summary JSONs" in res.stderr


@pytest.mark.parametrize("precision", ["32", "bf16"])  # the folded CPU form, and the module in fixed-shape passes
def test_a_reads_score_does_not_depend_on_its_batch_companions(reads, precision):
    """Bit-identical p_viral alone or among others: what chunked = unchunked rests on."""
    import numpy as np

    from genointerp.checkpoint import load_model_dir
    from genointerp.reads.kmerize import encode_joined
    from genointerp.viral.classify import ClassifyRequest, score_batch, window_scorer
    from genointerp.resources import builtin_model_dir

    model, config = load_model_dir(builtin_model_dir(), expect="xvir")
    L, k = config["model"]["read_length"], config["model"]["k"]
    has_unknown = config["model"]["vocab_size"] > 4**k
    batch = read_fastq(reads)[:40]  # all scored
    scorer = window_scorer(model, ClassifyRequest([str(reads)], precision=precision))
    together, _ = score_batch(scorer, *encode_joined([r[1] for r in batch]), L, k, has_unknown)
    for j in (0, 37):
        alone, _ = score_batch(scorer, *encode_joined([r[1] for r in batch[j:j + 1]]), L, k, has_unknown)
        assert alone[0].tobytes() == together[j].tobytes()
    assert np.isfinite(together).all()


def test_a_pipe_cannot_be_chunked(reads, tmp_path):
    from test_read_inputs import Pipes

    pipes = Pipes()
    try:
        res = run("classify-reads", pipes(reads.read_bytes()), "--chunk", "1/2", "-o", tmp_path / "c.tsv")
    finally:
        pipes.close()
    assert res.exit_code == 2 and "cannot be chunked" in res.stderr and not (tmp_path / "c.tsv").exists()


def test_merge_reads_chunk_outputs_from_pipes(four_chunks, whole, tmp_path):
    from test_read_inputs import Pipes

    pipes = Pipes()
    try:
        files = [pipes((job / name).read_bytes()) for name in OUTS for job in four_chunks[::-1]]
        res = run("merge-calls", *files, "-o", tmp_path / OUTS[0], "--summary", tmp_path / OUTS[1],
                  "--viral-out", tmp_path / OUTS[2])
    finally:
        pipes.close()
    assert res.exit_code == 0, res.output
    assert_same_outputs(tmp_path, whole)


def test_merge_names_a_truncated_gzip_viral_file(four_chunks, tmp_path):
    import gzip

    cut = tmp_path / "cut.fq.gz"
    text = gzip.decompress((four_chunks[1] / OUTS[2]).read_bytes())
    assert text.count(b"\n") >= 8  # the chunk called reads viral
    cut.write_bytes(gzip.compress(text)[:-12])
    virals = [j / OUTS[2] for j in four_chunks]
    virals[1] = cut
    res = run("merge-calls", *(j / OUTS[0] for j in four_chunks), *virals, "--viral-out", tmp_path / "v.fq",
              "-o", tmp_path / "m.tsv")
    assert res.exit_code == 1 and not (tmp_path / "v.fq").exists() and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, f"{cut}: truncated or corrupt gzip data")


def test_merge_refuses_a_truth_table_as_calls(reads, tmp_path):
    from genointerp.reads.simulate import TRUTH_HEADER

    truth = tmp_path / "truth.tsv"
    truth.write_text(TRUTH_HEADER + "".join(f"{n}\tviral\tHPV16\t0\t150\t+\t0\t0\n" for n, _, _ in read_fastq(reads)[:5]))
    res = run("merge-calls", truth, "-o", tmp_path / "m.tsv")
    assert res.exit_code == 1 and not (tmp_path / "m.tsv").exists()
    assert_one_error_line(res, f"{truth}: a table of read_id, label, contig, start, end, strand, ..., not a classify-reads calls TSV")


@pytest.fixture(scope="module")
def twin_chunks(reads, tmp_path_factory):
    """Two chunks of the same 12 reads under other names: equal read counts and viral calls."""
    tmp = tmp_path_factory.mktemp("twins")
    first = read_fastq(reads)[:12]
    fq = tmp / "twins.fq"
    fq.write_text("".join(f"@{p}{n}\n{s}\n+\n{q}\n" for p in ("a:", "b:") for n, s, q in first))
    whole = classify(fq, tmp / "whole")
    jobs = [classify(fq, tmp / f"chunk{i}", "--chunk", f"{i}/2") for i in (1, 2)]
    summaries = [json.loads((job / OUTS[1]).read_text()) for job in jobs]
    assert summaries[0]["reads_total"] == summaries[1]["reads_total"] == 12
    assert summaries[0]["reads_called_viral"] == summaries[1]["reads_called_viral"] > 0
    return whole, jobs


def test_merge_checks_read_names_not_only_counts(twin_chunks, tmp_path):
    whole, (a, b) = twin_chunks
    res = run("merge-calls", a / OUTS[0], b / OUTS[0], a / OUTS[1], b / OUTS[1], a / OUTS[2], b / OUTS[2],
              "-o", tmp_path / "m.tsv", "--viral-out", tmp_path / "v.fq.gz", "--summary", tmp_path / "s.json")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "m.tsv").read_bytes() == (whole / OUTS[0]).read_bytes()
    assert (tmp_path / "s.json").read_bytes() == (whole / OUTS[1]).read_bytes()
    # viral-read files out of order
    res = run("merge-calls", a / OUTS[0], b / OUTS[0], b / OUTS[2], a / OUTS[2], "-o", tmp_path / "n.tsv",
              "--viral-out", tmp_path / "w.fq.gz")
    assert res.exit_code == 1 and not (tmp_path / "n.tsv").exists() and not (tmp_path / "w.fq.gz").exists()
    assert_one_error_line(res, "list TSVs and viral-read files in the same order")
    # TSVs out of order against their summaries
    res = run("merge-calls", b / OUTS[0], a / OUTS[0], a / OUTS[1], b / OUTS[1], "-o", tmp_path / "n.tsv")
    assert res.exit_code == 1 and not (tmp_path / "n.tsv").exists()
    assert_one_error_line(res, f"{b / OUTS[0]}: its reads are not the ones {a / OUTS[1]} (chunk 1/2) counts")
