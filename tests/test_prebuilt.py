"""Prebuilt viral indexes (genointerp.viral.evidence.prebuilt, `genointerp index-model`): the memory-mapped
arrays are the built indexes, found in the folder, then the cache; stale or damaged ones are
never used; runs give the same bytes with and without them."""

import json
import shutil

import numpy as np
import pytest

from conftest import DATA
from genointerp.seq.joined import encode_joined
from genointerp.report import SILENT
from genointerp.viral.evidence.seeds import KmerSettings, build_index, load_index
from genointerp.viral.evidence.prebuilt import CACHE_ENV, current, load_indexes, write_folder_index
from genointerp.viral.evidence.protein import ProteinSettings, build_protein_index, load_protein_index
from genointerp.viral.model_files import FOLDED_FILE, INDEX_DIR, KMER_KEY, MANIFEST, PROTEIN_KEY
from genointerp.io.sequences import read_reference


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A model folder's viral part: four papillomavirus genomes, E. coli's seeds and peptides left out."""
    out = tmp_path_factory.mktemp("viral")
    kmer = build_index(out, [str(DATA / "hpv4.fa")], [str(DATA / "ecoli_slice.fa")], KmerSettings(), True, SILENT)
    protein = build_protein_index(out, read_reference(str(out / kmer["references"])), [str(DATA / "ecoli_slice.fa")],
                                  ProteinSettings(), True, SILENT)
    config = json.loads(json.dumps({KMER_KEY: kmer, PROTEIN_KEY: protein}))
    (out / "config.json").write_text(json.dumps(config))
    return out, config


def _copy(folder, tmp_path):
    src, config = folder
    dst = tmp_path / "m"
    shutil.copytree(src, dst)
    return dst, config


def _reads():
    genomes = [seq for _, seq in read_reference(str(DATA / "hpv4.fa"))]
    rng = np.random.default_rng(5)
    viral = [g[i : i + 150] for g in genomes for i in range(0, 3000, 400)]
    other = ["".join(rng.choice(list("ACGT"), 150)) for _ in range(20)]
    return encode_joined(viral + other)


def _same(a, b) -> None:
    (ka, pa), (kb, pb) = a, b
    for x, y in ((ka.ids, kb.ids), (ka.labels, kb.labels), (ka.table, kb.table), (ka.places.letters, kb.places.letters),
                 (ka.places.keys, kb.places.keys), (ka.places.start, kb.places.start),
                 (ka.places.places, kb.places.places), (pa.ids, pb.ids),
                 (pa.labels, pb.labels), (pa.table, pb.table), (pa.proteins.residues, pb.proteins.residues),
                 (pa.proteins.keys, pb.proteins.keys), (pa.proteins.start, pb.proteins.start),
                 (pa.proteins.places, pb.proteins.places)):
        np.testing.assert_array_equal(x, y)
    assert ka.viruses == kb.viruses and pa.viruses == pb.viruses and ka.settings == kb.settings
    reads = _reads()
    for x, y in ((ka.evidence(*reads), kb.evidence(*reads)), (pa.evidence(*reads), pb.evidence(*reads))):
        for field in ("hits", "bits"):
            assert getattr(x, field).tobytes() == getattr(y, field).tobytes()


def test_the_prebuilt_index_is_the_built_one_memory_mapped(folder, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    m, config = _copy(folder, tmp_path)
    built = (load_index(m, config), load_protein_index(m, config))
    lines = []
    first = load_indexes(m, config, lines.append)  # built, and stored in the cache
    assert len(lines) == 1 and "no prebuilt index" in lines[0] and "cached it in" in lines[0]
    _same(built, first)
    again = load_indexes(m, config, lines.append)  # from the cache, silently
    assert len(lines) == 1 and isinstance(again[0].ids.base, np.memmap) and isinstance(again[1].proteins.places.base, np.memmap)
    _same(built, again)
    assert write_folder_index(m, config) == m / INDEX_DIR and current(m, config)
    shutil.rmtree(tmp_path / "cache")
    own = load_indexes(m, config, lines.append)  # from the folder, no cache needed
    assert len(lines) == 1 and not (tmp_path / "cache").exists()
    _same(built, own)


def test_without_a_cache_each_run_builds_and_says_how_to_stop_that(folder, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, "off")
    m, config = _copy(folder, tmp_path)
    lines = []
    load_indexes(m, config, lines.append)
    load_indexes(m, config, lines.append)
    assert len(lines) == 2 and all(f"genointerp index-model {m}" in line for line in lines)


def test_an_unwritable_cache_is_a_note_not_an_error(folder, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))  # under a file: cannot be made
    m, config = _copy(folder, tmp_path)
    lines = []
    kmer, _ = load_indexes(m, config, lines.append)
    assert kmer.ids.size == config[KMER_KEY]["n_kmers"] and "cannot be written" in lines[0]


def test_a_stale_or_damaged_index_is_never_used(folder, tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, "off")
    m, config = _copy(folder, tmp_path)
    built = (load_index(m, config), load_protein_index(m, config))
    write_folder_index(m, config)
    changed = json.loads(json.dumps(config))
    changed[KMER_KEY]["min_entropy"] = 1.6  # other settings than the index was built with: stale
    assert current(m, changed) is False
    manifest = json.loads((m / INDEX_DIR / MANIFEST).read_text())
    (m / INDEX_DIR / "kmer_ids.npy").write_bytes((m / INDEX_DIR / "kmer_ids.npy").read_bytes()[:1000])  # cut short
    lines = []
    found = load_indexes(m, config, lines.append)
    assert "not used, damaged" in lines[0] and f"genointerp index-model {m}" in lines[0]
    _same(built, found)
    write_folder_index(m, config)  # replaces the damaged one
    assert current(m, config) and json.loads((m / INDEX_DIR / MANIFEST).read_text()) == manifest
    assert sorted(p.name for p in m.iterdir() if p.name.startswith(".")) == []  # no temporaries left


def test_index_model_writes_checks_and_refuses_a_folder_without_an_index(folder, tmp_path, cli):
    from genointerp.viral.typing.placement import PANEL_REFS

    m, _ = _copy(folder, tmp_path)
    (m / "model.safetensors").write_bytes((DATA.parent / "genointerp/resources/models/xvir_hpv/model.safetensors").read_bytes())
    config = json.loads((m / "config.json").read_text())
    config["model"] = json.loads((DATA.parent / "genointerp/resources/models/xvir_hpv/config.json").read_text())["model"]
    (m / "config.json").write_text(json.dumps(config))
    res = cli("index-model", m, "--check")
    assert res.exit_code == 1 and res.stdout == f"{m / INDEX_DIR}\tmissing\n"
    res = cli("index-model", m)
    assert res.exit_code == 0 and (m / INDEX_DIR / MANIFEST).is_file() and (m / FOLDED_FILE).is_file()
    res = cli("index-model", m, "--check")
    assert res.exit_code == 0 and res.stdout == f"{m / INDEX_DIR}\tcurrent\n"
    (m / INDEX_DIR / PANEL_REFS).unlink()  # a folder indexed before the references' list was stored
    res = cli("index-model", m, "--check")
    assert res.exit_code == 1 and res.stdout == f"{m / INDEX_DIR}\tstale\n"
    res = cli("index-model", m)
    assert res.exit_code == 0 and (m / INDEX_DIR / PANEL_REFS).is_file()
    (m / FOLDED_FILE).unlink()  # the folded model tables are checked too
    res = cli("index-model", m, "--check")
    assert res.exit_code == 1 and res.stdout == f"{m / INDEX_DIR}\tmissing\n"
    del config[KMER_KEY], config[PROTEIN_KEY]
    (m / "config.json").write_text(json.dumps(config))
    res = cli("index-model", m)  # no index to build, but the model still folds
    assert res.exit_code == 0 and (m / FOLDED_FILE).is_file()
    config["model"]["position"] = "rope"
    (m / "config.json").write_text(json.dumps(config))
    res = cli("index-model", m)
    assert res.exit_code == 1 and "has no viral index" in res.stderr and "nothing to prebuild" in res.stderr
    res = cli("index-model", tmp_path / "nowhere")
    assert res.exit_code == 1 and "not found" in res.stderr


def test_the_prebuilt_panel_index_places_reads_as_the_built_one(folder, tmp_path, monkeypatch):
    """minimap2's index of the references, stored in the prebuilt index folder (store_panel_index),
    is the one the panel would build: the same placements, piece for piece."""
    from genointerp.viral.typing.placement import PANEL_INDEX, ViralPanel, store_panel_index

    monkeypatch.setenv(CACHE_ENV, "off")
    m, config = _copy(folder, tmp_path)
    genomes = [seq for _, seq in read_reference(str(DATA / "hpv4.fa"))]
    pieces = [g[i : i + 150] for g in genomes for i in range(0, len(g) - 150, 997)]
    built_kmer = load_indexes(m, config, lambda message: None)[0]
    assert built_kmer.prebuilt is None and store_panel_index(m, built_kmer) is None  # nowhere to store it
    built = ViralPanel(m, [], lambda message: None, best_n=64, index=built_kmer)
    write_folder_index(m, config)
    kmer = load_indexes(m, config, lambda message: None)[0]
    assert kmer.prebuilt == m / INDEX_DIR and not (m / INDEX_DIR / PANEL_INDEX).exists()
    assert store_panel_index(m, kmer) == m / INDEX_DIR / PANEL_INDEX
    assert sorted(p.name for p in (m / INDEX_DIR).iterdir() if p.name.startswith(".")) == []
    loaded = ViralPanel(m, [], lambda message: None, best_n=64, index=kmer)
    # the stored index loads at the first piece to align, not for the references' names
    assert sorted(loaded.refs) == sorted(built.refs) and loaded._sensitive._aligner is None
    assert loaded.place(pieces) == built.place(pieces) and sum(p is not None for p in built.place(pieces)) > 20
    assert loaded._sensitive._aligner is not None
    assert [loaded.place_all(p, 50) for p in pieces] == [built.place_all(p, 50) for p in pieces]


def test_the_stored_references_list_spares_reading_them(folder, tmp_path, monkeypatch, cli):
    """Beside minimap2's index, store_panel_index stores the references' names, lengths and
    descriptions (PANEL_REFS): a panel is then made without reading the references (the same refs),
    which are read only where an aligner is built from them (long reads: the same placements).
    A folder without the list (stored before it was) or with a damaged one reads them as before."""
    from genointerp.viral.typing import placement
    from genointerp.viral.typing.placement import PANEL_REFS, ViralPanel, store_panel_index

    monkeypatch.setenv(CACHE_ENV, "off")
    m, config = _copy(folder, tmp_path)
    # a description with a tab in it, and references without any
    (m / "ref_descriptions.tsv").write_text("HPV16\tlineage A\tfrom PaVE\nHPV18\tlineage B\n")
    builtin = DATA.parent / "genointerp/resources/models/xvir_hpv"
    (m / "model.safetensors").write_bytes((builtin / "model.safetensors").read_bytes())
    config = {**config, "model": json.loads((builtin / "config.json").read_text())["model"]}
    (m / "config.json").write_text(json.dumps(config))
    write_folder_index(m, config)
    kmer = load_indexes(m, config, lambda message: None)[0]
    store_panel_index(m, kmer)
    assert (m / INDEX_DIR / PANEL_REFS).read_text().startswith("HPV16\t7906\tlineage A\tfrom PaVE\nHPV18\t")
    read = []
    reading = placement.folder_references
    monkeypatch.setattr(placement, "folder_references", lambda *args: read.append(1) or reading(*args))
    genomes = [seq for _, seq in read_reference(str(DATA / "hpv4.fa"))]
    long_pieces = [g[i : i + 2000] for g in genomes for i in (0, 3000)]

    def panel():
        return ViralPanel(m, [], lambda message: None, best_n=64, index=kmer)

    listed = panel()
    assert read == []  # no reference read
    reads = tmp_path / "reads.fa"
    reads.write_text("".join(f">r{i}_{j}\n{g[j : j + 150]}\n" for i, g in enumerate(genomes)
                             for j in range(0, 7000, 350)))
    calls = {}
    for listing in ("listed", "unlisted"):
        out = tmp_path / listing
        res = cli("classify-reads", reads, "-m", m, "--evidence", "kmer", "-t", "1", "-o", out.with_suffix(".tsv"),
                  "--report", out.with_suffix(".report.tsv"))
        assert res.exit_code == 0, res.stderr
        calls[listing] = out.with_suffix(".tsv").read_bytes(), out.with_suffix(".report.tsv").read_bytes()
        assert len(read) == (0 if listing == "listed" else 1)  # classify-reads read no reference where listed
        if listing == "listed":
            (m / INDEX_DIR / PANEL_REFS).rename(tmp_path / "list")
    assert calls["listed"] == calls["unlisted"] and b"HPV16" in calls["listed"][1]
    (tmp_path / "list").rename(m / INDEX_DIR / PANEL_REFS)
    read.clear()
    listed = panel()
    (m / INDEX_DIR / PANEL_REFS).rename(tmp_path / "list")
    unlisted = panel()  # an index folder without the list: the references read, the same panel
    assert read == [1] and list(listed.refs.items()) == list(unlisted.refs.items())
    assert listed.refs["HPV16"].description == "lineage A\tfrom PaVE" and listed.refs["HPV6"].description == ""
    placed = [unlisted.place_long(p) for p in long_pieces]
    assert [listed.place_long(p) for p in long_pieces] == placed and all(placed)
    assert read == [1, 1] and listed._fasta() == unlisted._fasta()  # read where the long-read aligner was built
    text = (tmp_path / "list").read_text()
    for damaged in (text.replace("\t7906\t", "\t7907\t"), text.replace("\t7906\t", "\tmany\t"), "",
                    text.replace("HPV18", "HPV16")):
        (m / INDEX_DIR / PANEL_REFS).write_text(damaged)
        assert list(panel().refs.items()) == list(unlisted.refs.items())
    assert len(read) == 6


def test_an_index_whose_places_are_not_its_seeds_is_never_stored(folder, tmp_path):
    """The stored ids double as the places tables' keys (prebuilt._open), so save refuses an index
    without its places, or with places of other seeds, and leaves no folder behind."""
    import dataclasses

    from genointerp.viral.evidence.prebuilt import save

    src, config = folder
    kmer = load_index(src, config)
    protein = load_protein_index(src, config)
    fewer = dataclasses.replace(kmer, ids=kmer.ids[1:], labels=kmer.labels[1:], table=None, places=kmer.places)
    for k, p, what in ((dataclasses.replace(kmer, places=None), None, "every seed"), (fewer, None, "every seed")):
        with pytest.raises(ValueError, match=what):
            save(tmp_path / "index", "d", k, p)
    protein.proteins = None
    with pytest.raises(ValueError, match="every amino-acid seed"):
        save(tmp_path / "index", "d", kmer, protein)
    assert list(tmp_path.iterdir()) == []
