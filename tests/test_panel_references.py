"""Typing's panel reads a model folder's references (genointerp.viral.typing.placement.folder_references)
without pysam where the file is plain and the seed index vouches for the reading, else as
`_read_described` does: the same records either way."""

import gzip
import json

import pytest

from conftest import DATA
from genointerp.report import SILENT
from genointerp.viral.evidence.prebuilt import CACHE_ENV, load_indexes
from genointerp.viral.evidence.seeds import KmerSettings, build_index
from genointerp.viral.model_files import KMER_KEY, REFS_FILE
from genointerp.viral.typing.placement import _laid_out, _plain_fasta, _read_described, folder_references


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A model folder's seed index of four papillomavirus genomes (its references as train-xvir writes them)."""
    out = tmp_path_factory.mktemp("viral")
    kmer = build_index(out, [str(DATA / "hpv4.fa")], [str(DATA / "ecoli_slice.fa")], KmerSettings(), True, SILENT)
    config = json.loads(json.dumps({KMER_KEY: kmer}))
    (out / "config.json").write_text(json.dumps(config))
    return out, config


@pytest.fixture()
def index(folder, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, "off")
    return load_indexes(folder[0], folder[1], lambda message: None)[0]


def _text(folder) -> str:
    with gzip.open(folder[0] / REFS_FILE, "rt") as fh:
        return fh.read()


def test_a_plain_file_the_index_vouches_for_is_read_without_pysam_as_pysam_reads_it(folder, index):
    path = str(folder[0] / REFS_FILE)
    plain = _plain_fasta(path)
    assert plain is not None and len(plain) == 4 and _laid_out(plain, index.places.letters, index.settings.k)
    assert folder_references(folder[0], index) == _read_described(path) == plain


@pytest.mark.parametrize("change, plain", [
    (lambda t: t.replace("\n", "\r\n"), False),  # CR line ends
    (lambda t: t.replace(">", "> ", 1), False),  # a header starting with a blank
    (lambda t: t.replace("\n", " a>b\n", 1), False),  # a '>' within a header line
    (lambda t: t.replace("\n", "\n\n", 2), True),  # blank lines, which htslib skips
    (lambda t: t.replace("ACGT", "acgt"), True),  # lower case, as written
    (lambda t: t.replace("\n", "\nA", 1), True),  # a contig one base longer: read, but not laid out as indexed
])
def test_any_other_file_is_read_as_read_described_reads_it(folder, index, tmp_path, change, plain):
    text = change(_text(folder))
    (tmp_path / REFS_FILE).write_bytes(gzip.compress(text.encode()))
    path = str(tmp_path / REFS_FILE)
    records = _plain_fasta(path)
    assert (records is not None) == plain
    if plain:  # the index vouches for the same contigs only
        same = [(n, len(s)) for n, _, s in records] == [(n, len(s)) for n, _, s in _read_described(str(folder[0] / REFS_FILE))]
        assert _laid_out(records, index.places.letters, index.settings.k) == same
    assert folder_references(tmp_path, index) == _read_described(path)
