import pytest

from conftest import run_cli
from genointerp.errors import InputError
from genointerp.io.jsonfile import json_object, read_json_object


def test_a_json_object_is_returned():
    assert json_object(b'{"a": 1}', "x.json") == {"a": 1}


@pytest.mark.parametrize("text, message", [
    (b'{"a": ', r"x\.json: not valid JSON"),
    (b"\xff\xfe junk", r"x\.json: not valid JSON"),
    (b"[1, 2]", r"x\.json: not a model configuration"),  # valid JSON, but .get would fail on it
])
def test_bad_text_is_one_input_error(text, message):
    with pytest.raises(InputError, match=message):
        json_object(text, "x.json", "a model configuration")


def test_a_missing_file_gives_the_callers_line(tmp_path):
    with pytest.raises(InputError, match="^no model here$"):
        read_json_object(tmp_path / "config.json", "no model here")


def test_a_model_directory_whose_config_is_a_list_is_refused_by_the_cli(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("[]\n")
    res = run_cli("classify-reads", "test-data/tumor_small.fq.gz", "-m", str(tmp_path / "m"),
                  "-o", str(tmp_path / "calls.tsv"))
    assert res.exit_code == 1 and "config.json: not a model configuration" in res.output
    assert not (tmp_path / "calls.tsv").exists()
