"""The user-facing docs: a README a newcomer reads in minutes, a command reference that matches the
CLI, links that lead somewhere, and no tracker references a user cannot follow."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
USER_DOCS = [README, *DOCS, ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md"]
README_MAX_LINES = 300


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", ROOT / "scripts" / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_up_to_date():
    module = _cli_reference()
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == module.reference(), f"docs/cli.md is out of date with the CLI: run `{module.REGENERATE}`"


def test_cli_reference_does_not_depend_on_the_terminal(monkeypatch):
    module = _cli_reference()
    wide = module.reference()
    for name in ("COLUMNS", "TERMINAL_WIDTH"):
        monkeypatch.setenv(name, "30")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert module.reference() == wide


def test_cli_reference_check_names_the_command_to_run(tmp_path, monkeypatch, capsys):
    module = _cli_reference()
    stale = tmp_path / "cli.md"
    stale.write_text("# Command reference\n", encoding="utf-8")
    monkeypatch.setattr(module, "DOC", stale)
    assert module.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "python scripts/cli_reference.py > docs/cli.md" in err
    stale.write_text(module.reference(), encoding="utf-8")
    assert module.main(["--check"]) == 0


def test_cli_reference_covers_every_command_in_declaration_order():
    import typer.main

    from genointerp.cli import app

    group = typer.main.get_command(app)
    names = [n for n in group.list_commands(None) if not group.commands[n].hidden]
    text = _cli_reference().reference()
    headings = re.findall(r"^## ([a-z][\w-]*)$", text, flags=re.M)
    assert headings == names
    for name in names:  # each command's options and its examples are there
        section = text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert f"Usage: genointerp {name} " in section
        assert "`-h, --help`" in section
        example = [line.strip() for line in (group.commands[name].epilog or "").splitlines() if line.startswith("  ")]
        assert not example or f"```sh\n{example[0]}\n" in section


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/ (at most {README_MAX_LINES})"


def test_readme_keeps_the_test_command_ci_runs():
    # .ci/run runs the README's test command; the README must keep naming it
    assert "make test" in README.read_text(encoding="utf-8")
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _links(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # not inside code blocks
    return re.findall(r"\]\(([^)\s]+)\)", text)


def _anchors(markdown: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"```.*?```", "", markdown.read_text(encoding="utf-8"), flags=re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_existing_files(doc):
    missing = []
    for link in _links(doc.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):
            continue  # a URL
        path, _, anchor = link.partition("#")
        target = (doc.parent / path).resolve() if path else doc
        if not target.exists():
            missing.append(link)
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            missing.append(link)
    assert not missing, f"{doc.relative_to(ROOT)} links to missing files or headings: {missing}"


# "issue 17", "issues 8 and 9", "#31", "(#8)"; not "READ#0" or "ids get #0, #1" (tiled read names)
TRACKER_REFERENCE = re.compile(r"\bissues?\s*#?\d+|(?<![\w&/])#\d{2,}\b|\(#\d+\)", re.I)


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers_in_user_docs(doc):
    hits = [
        f"{i}: {line.strip()}"
        for i, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
        if TRACKER_REFERENCE.search(line)
    ]
    assert not hits, f"{doc.relative_to(ROOT)} names tracker issues (name a version or a date instead): {hits}"


def test_the_method_guides_exist():
    for name in ("viral", "tracks", "capsule", "attention", "pipelines", "cli", "data"):
        assert (ROOT / "docs" / f"{name}.md").is_file(), name
    assert "docs/data.md" in README.read_text(encoding="utf-8")  # the data sources are one link away
