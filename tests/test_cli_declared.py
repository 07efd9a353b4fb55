"""Every option is declared once, on its request (genointerp.options), and the command line is
built from that declaration (genointerp.cli.declare): the CLI and a library caller get the same
request, bounds and messages; help shows the real defaults and reads at 80 columns."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path

import pytest
import typer

from conftest import run_cli
from genointerp.cli import _build_app
from genointerp.cli.declare import DeclaredCommand, build_function, request_class
from genointerp.options import declared

ROOT = Path(__file__).resolve().parents[1]
app = _build_app()  # the Typer application (importing a command module first leaves its name to the module)


def _commands() -> dict:
    return typer.main.get_command(app).commands


COMMANDS = sorted(_commands())


def test_every_command_is_declared_on_its_request():
    assert all(isinstance(command, DeclaredCommand) for command in _commands().values())


def test_the_cli_modules_declare_no_option_and_no_bound():
    """No typer.Option and no min=/max= in the CLI: the request's field is the one declaration."""
    for path in (ROOT / "genointerp" / "cli").glob("*.py"):
        if path.name in ("app.py", "declare.py"):  # the application's own options; the adapter
            continue
        text = path.read_text()
        assert "typer.Option(" not in text and not re.search(r"\b(min|max)=", text), path.name


def _request(name: str):
    return request_class(_commands()[name].spec[0])


def test_no_bound_is_checked_by_hand():
    """A declared option's bound and choices are checked by execute (genointerp.job.check_values)
    from its declaration; no module checks a range or a choice list of its own."""
    for path in (ROOT / "genointerp").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"\b(in_ranges?|one_of)\(", text), path
    assert all(isinstance(command, DeclaredCommand) for command in _commands().values())


def _required_values(cls) -> tuple[dict, dict]:
    """A value for each field the command line requires (any text does for building a request),
    as the command line gives it and as a library caller does (parsed, for KEY=VALUE options)."""
    given, values = {}, {}
    for field in dataclasses.fields(cls):
        decl = declared(field)
        if decl is None:
            continue
        required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        if required or (decl.has_cli_default and decl.cli_default is ...):
            kind = decl.cli_type or typing.get_type_hints(cls)[field.name]
            text = "a=x.fq" if decl.parse is not None else "x.fq"
            given[field.name] = [text] if typing.get_origin(kind) is list else text
            values[field.name] = decl.parse(given[field.name]) if decl.parse is not None else given[field.name]
    return given, values


def _argv(cls, values: dict) -> list[str]:
    argv = []
    for field in dataclasses.fields(cls):
        decl = declared(field)
        if decl is None or field.name not in values:
            continue
        given = values[field.name] if isinstance(values[field.name], list) else [values[field.name]]
        if decl.argument:
            argv += given
        else:
            for value in given:
                argv += [decl.flags[-1].split("/")[0], value]
    return argv


@pytest.mark.parametrize("name", COMMANDS)
def test_the_cli_and_a_library_caller_build_the_same_request(name):
    """The command line with only its required values builds the request a library caller gets
    from the same values and the field defaults, device and threads included (both are resolved
    later, by the job, for either)."""
    command = _commands()[name]
    cls = _request(name)
    given, values = _required_values(cls)
    built = []
    function, _ = build_function(command.spec[0], lambda req, force: built.append(req), command.spec[2])
    params, convertors, _ = typer.main.get_params_convertors_ctx_param_name_from_function(function)
    ctx = command.make_context(name, _argv(cls, given))
    callback = typer.main.get_callback(callback=function, params=params, convertors=convertors,
                                      context_param_name=None, pretty_exceptions_short=False)
    callback(**{k: v for k, v in ctx.params.items() if k in {p.name for p in params}})
    assert built == [cls(**values)]


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_each_fields_own_default(name):
    """The default --help shows for an option is the request field's (never typed into prose)."""
    command = _commands()[name]
    cls = _request(name)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    ctx = command.make_context(name, ["--help"], resilient_parsing=True)
    for param in command.get_params(ctx):
        field = fields.get(param.name)
        if field is None or declared(field).has_cli_default or declared(field).parse is not None:
            continue
        default = field.default if field.default is not dataclasses.MISSING else (
            field.default_factory() if field.default_factory is not dataclasses.MISSING else None)
        shown = param.default
        assert (list(shown) if isinstance(shown, tuple) else shown) == default or (default is None and shown is None), \
            f"{name} {param.name}: help says {shown!r}, the request {default!r}"


def test_min_bits_help_gives_the_built_in_models_rule():
    from genointerp.model_folder import read_model_config
    from genointerp.resources import builtin_model_dir
    from genointerp.viral.classify.calling import rule_of

    path = builtin_model_dir()
    rule = rule_of(read_model_config(str(path), expect="xvir"), "config")
    res = run_cli("classify-reads", "--help", env={"COLUMNS": "400"})
    assert f"calling rule, {rule.min_bits:g} for the built-in model" in res.stdout


def _one_word_breaks(text: str) -> list[str]:
    """Lines of rendered help whose text (its last column in a table) is a single word that ends
    no phrase while the next line goes on: the width broke the phrase after one word."""
    lines = [line.strip("│ ").rstrip() for line in text.splitlines()]
    bad = []
    for line, after in zip(lines, lines[1:]):
        cell = re.split(r"\s{2,}", line.strip())[-1] if line.strip() else ""
        following = re.split(r"\s{2,}", after.strip())[-1] if after.strip() else ""
        new_item = after.strip().startswith(("-", "*", "╰", "╭")) or following.startswith(("[", "-"))
        if cell and " " not in cell and not re.search(r"[.,;:)\]]$", cell) and following and not new_item:
            bad.append(f"{line!r} / {after!r}")
    return bad


@pytest.mark.parametrize("name", COMMANDS)
def test_help_reads_at_80_columns(name):
    res = run_cli(name, "--help", env={"COLUMNS": "80"})
    assert res.exit_code == 0
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    assert _one_word_breaks(res.stdout) == []


def test_quiet_and_debug_work_after_the_command_name(tmp_path):
    res = run_cli("versions", "-o", str(tmp_path / "v.yml"), "-q", "--debug")
    assert res.exit_code == 0 and res.stderr == ""
    res = run_cli("kmerize", tmp_path / "missing.fq", "-o", tmp_path / "k", "--debug", catch_exceptions=True)
    assert res.exit_code != 0 and isinstance(res.exception, Exception)  # a traceback, not one line


def test_an_old_spelling_still_works_with_one_warning_line(tmp_path):
    """--fasta (now -R/--reference) is accepted for a release, with a one-line warning."""
    res = run_cli("predict-tracks", "--fasta", str(tmp_path / "missing.fa"), "--chroms", "chr1",
                  "-o", str(tmp_path / "out"))
    lines = res.stderr.strip().splitlines()
    assert lines[0] == ("genointerp: warning: --fasta is deprecated and goes in a later release; use --reference")
    assert res.exit_code == 1 and len(lines) == 2 and "missing.fa" in lines[1]


def test_one_name_for_the_reference_and_the_model():
    """A reference FASTA is -R/--reference and a model read is -m/--model in every command that
    takes one."""
    for name, command in _commands().items():
        options = {opt for p in command.params for opt in (*getattr(p, "opts", ()),) if opt.startswith("-")}
        assert "--fasta" not in options and "--host" not in options, name
        if "--reference" in options:
            assert "-R" in options, name
        if "--model" in options:
            assert "-m" in options, name


def _options(command) -> set[str]:
    return {opt for p in command.params for opt in getattr(p, "opts", ()) if opt.startswith("-")}


def _readme_common_bullets() -> list[str]:
    """The README's "Common behaviour of every command" bullets, each joined onto one line."""
    text = (ROOT / "README.md").read_text().split("Common behaviour of every command:\n", 1)[1]
    bullets: list[str] = []
    for line in text.split("\n\n", 1)[0].splitlines():
        if line.startswith("- "):
            bullets.append(line[2:])
        else:
            bullets[-1] += " " + line.strip()
    return bullets


def test_the_readmes_common_options_are_the_clis():
    """What the README promises of the common options holds: --seed in exactly the commands it names,
    -R/--reference and -m/--model where a command takes one, --force in every command that writes,
    -q and --debug on the application (and after a command's name: the test above)."""
    bullets = _readme_common_bullets()
    commands = _commands()
    seed = next(b for b in bullets if b.startswith("`--seed`"))
    named = {name for name in commands if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", seed.split(":", 1)[0])}
    assert named == {name for name, command in commands.items() if "--seed" in _options(command)}
    reference = next(b for b in bullets if "`-R/--reference`" in b)
    assert "`-m/--model`" in reference  # the check itself: test_one_name_for_the_reference_and_the_model
    writing = {name for name, command in commands.items() if name not in ("index-model", "versions")}
    assert all("--force" in _options(commands[name]) for name in writing)
    app_options = {opt for p in typer.main.get_command(app).params for opt in p.opts}
    assert {"-q", "--debug"} <= app_options
    assert any("`-q`" in b for b in bullets) and any("`--debug`" in b for b in bullets)
