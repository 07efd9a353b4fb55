"""One adapter from a request's declared fields (genointerp.options) to a Typer command.

`command(name, "module:Request", ...)` registers a command whose arguments and options are the
request's declared fields, in their order: flags, help, default, bounds and choices as the field
declares them (its default is the default --help shows). The command builds the request from the
command line and hands it to the decorated function with --force; nothing is copied by hand.

The request's module is imported only when the command's parameters are first needed (its help,
or a run of it): the job modules import numpy and torch, and `genointerp --help` and `--version`,
which build every command, must not. A deprecated spelling of an option is accepted with a
one-line warning on stderr.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import shutil
import typing
from typing import Any, Callable, List, Literal, Optional

import typer
from typer.core import TyperCommand

from genointerp.cli import collector
from genointerp.cli.app import app
from genointerp.cli.common import warn
from genointerp.options import Declared, declared


def request_class(path: str) -> type:
    """The request class named "package.module:Class"."""
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def command(name: str, request: str, *, job: str, force: str | None = "existing outputs",
            prepare: Callable[[], None] | None = None, **settings: Any):
    """Register command `name` of the application: its parameters are the declared fields of
    `request` ("module:Class") and --force (overwrite `force`; None: the command has no --force);
    it runs `job` ("module:run") on the request through genointerp.job.execute, then the
    decorated `body(req, result)` says what to log. `prepare` runs before the request's module is
    imported (e.g. genointerp.runtime.single_threaded_numpy_blas, which must precede numpy).
    `settings` go to app.command (rich_help_panel, epilog, help); the command's help is the body's
    docstring unless `help` is given. The declaration is where a command lives: scripts/
    cli_reference.py lists every command's request and job from it."""

    def register(body: Callable[[Any, dict], Any]) -> Callable[[Any, dict], Any]:
        cls = type(f"{body.__name__}_command", (DeclaredCommand,),
                   {"spec": (request, body, force), "job": job, "prepare": staticmethod(prepare) if prepare else None})

        def stub() -> None:  # replaced by the declared parameters when first needed
            raise AssertionError("a declared command's parameters were not loaded")

        stub.__name__, stub.__doc__ = body.__name__, body.__doc__
        settings["help"] = one_line_paragraphs(settings.get("help") or inspect.getdoc(body) or "")
        app.command(name, cls=cls, **settings)(stub)
        return body

    return register


def one_line_paragraphs(text: str) -> str:
    """`text` with each paragraph on one line: Typer's rich help keeps a docstring's line breaks,
    which at another terminal width leave a word alone on a line; unbroken, it wraps to the width."""
    return "\n\n".join(" ".join(line.strip() for line in block.splitlines())
                        for block in inspect.cleandoc(text).split("\n\n") if block.strip())


RICH_MIN_WIDTH = 100  # columns from which a command's help is drawn by rich


class DeclaredCommand(TyperCommand):
    """A Typer command whose parameters are built from its request's fields on first use (read
    through `params`, as click and Typer read them)."""

    spec: tuple[str, Callable, str | None]  # request, body, what --force overwrites
    job: str
    prepare: Callable[[], None] | None = None

    def __init__(self, *args, **kwargs):
        self._loaded = False
        self.later_params: list = []  # the group's own (-q, --debug), after the declared ones
        super().__init__(*args, **kwargs)

    @property
    def params(self) -> list:
        if not self._loaded:
            self._load()
        return self._params

    @params.setter
    def params(self, value: list) -> None:
        self._params = value

    def _load(self, helps: bool = True) -> None:
        from typer.main import get_callback, get_params_convertors_ctx_param_name_from_function

        self._loaded = True
        if self.prepare is not None:
            self.prepare()
        request, body, force = self.spec
        function, self._deprecated = build_function(request, self.runner(body), force, helps)
        params, convertors, context_name = get_params_convertors_ctx_param_name_from_function(function)
        self._params = params + self._params + self.later_params
        self.callback = get_callback(callback=function, params=params, convertors=convertors,
                                     context_param_name=context_name, pretty_exceptions_short=False)

    def runner(self, body: Callable[[Any, dict], Any]) -> Callable[[Any, bool], Any]:
        """(req, force) -> the job run through execute (logs, warnings and progress on stderr), then body."""
        def run(req, force: bool):
            from genointerp.cli.common import REPORTER
            from genointerp.job import execute

            module, _, name = self.job.partition(":")
            job = getattr(importlib.import_module(module), name)
            collector.back()  # the program's modules are in (genointerp.cli.main)
            return body(req, execute(job, req, force, REPORTER))

        run.__name__, run.__doc__ = body.__name__, body.__doc__
        return run

    def format_help(self, ctx, formatter) -> None:
        """Rich's boxed tables on a wide terminal; below RICH_MIN_WIDTH columns (a pipe, a CI log,
        `less` on a laptop) click's plain two-column layout, whose help column stays wide enough
        to read (rich's four columns left it a word or two wide)."""
        if shutil.get_terminal_size().columns >= RICH_MIN_WIDTH:
            return super().format_help(ctx, formatter)
        rich, self.rich_markup_mode = self.rich_markup_mode, None
        try:
            super().format_help(ctx, formatter)
        finally:
            self.rich_markup_mode = rich
        formatter.buffer[:] = [text.replace("\\[", "[") for text in formatter.buffer]  # rich's escape

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        if not self._loaded:  # a help computed when shown (a model folder's default) is not read for a run
            options = args[: args.index("--")] if "--" in args else args
            self._load(helps=any(a in ("-h", "--help") for a in options))
        return super().parse_args(ctx, undeprecate(args, self._deprecated))


def undeprecate(args: list[str], deprecated: dict[str, str]) -> list[str]:
    """`args` with each deprecated option name replaced by the current one, with a warning."""
    out = []
    for i, token in enumerate(args):
        if token == "--":
            return out + args[i:]
        flag, eq, value = token.partition("=")
        if flag in deprecated:
            warn(f"{flag} is deprecated and goes in a later release; use {deprecated[flag]}")
            token = deprecated[flag] + eq + value
        out.append(token)
    return out


def _annotation(field_type: Any, decl: Declared) -> Any:
    """The type Typer gives the parameter: the declared command-line type, else the field's, with
    choices as a Literal (values stay plain strings)."""
    kind = decl.cli_type if decl.cli_type is not None else field_type
    if decl.choices is not None:
        choice = Literal[decl.choices]  # type: ignore[valid-type]
        many = typing.get_origin(kind) in (list, List) or typing.get_origin(_unoptional(kind)) in (list, List)
        kind = List[choice] if many else (Optional[choice] if _unoptional(kind) is not kind else choice)
    return kind


def _unoptional(kind: Any) -> Any:
    args = typing.get_args(kind)
    if type(None) in args and len(args) == 2:
        return next(a for a in args if a is not type(None))
    return kind


def _click_type(kind: Any, decl: Declared):
    """A number's declared range as click shows it in --help ([1<=x<=7]), but not checked by click:
    `execute` checks it (genointerp.job.check_values), so that the command line and a library
    caller get the same one-line error. None where there is no bound or the value is no number."""
    if decl.min is None and decl.max is None:
        return None
    base = _unoptional(kind)
    if typing.get_origin(base) in (list, List):
        base = typing.get_args(base)[0]
    if base not in (int, float):
        return None
    from typer._click import types

    class Shown(types.IntRange if base is int else types.FloatRange):
        def convert(self, value, param, ctx):
            number = types.IntParamType if base is int else types.FloatParamType
            return number.convert(self, value, param, ctx)

    return Shown(min=decl.min, max=decl.max, min_open=decl.min_open)


def _default(field: dataclasses.Field, decl: Declared) -> Any:
    if decl.has_cli_default:
        return decl.cli_default
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
        if decl.cli_type is not None and not value:  # given otherwise on the command line (KEY=VALUE, A,B)
            many = typing.get_origin(decl.cli_type) in (list, List)
            return [] if many else None
        return value
    return ...  # required


def build_function(request: str, body: Callable[[Any, bool], Any], force: str | None,
                   helps: bool = True) -> tuple[Callable, dict[str, str]]:
    """The function Typer reads (its signature: one parameter per declared field, then --force)
    that builds the request and calls body(req, force); and the deprecated spellings. Without
    `helps`, a help declared as a callable is left empty (it may read files: not for a run)."""
    cls = request_class(request)
    hints = typing.get_type_hints(cls)
    parameters, fields, deprecated = [], [], {}
    for field in dataclasses.fields(cls):
        decl = declared(field)
        if decl is None:
            continue
        kind = _annotation(hints[field.name], decl)
        default = _default(field, decl)
        text = decl.help_text() if helps or not callable(decl.help) else ""
        common = dict(help=text, metavar=decl.metavar, show_default=decl.show_default, hidden=decl.hidden)
        click_type = _click_type(kind, decl)
        if decl.argument:
            info = typer.Argument(default, click_type=click_type, **common)
        elif click_type is not None:
            info = typer.Option(default, *decl.flags, click_type=click_type, **common)
        else:
            info = typer.Option(default, *decl.flags, **common)
        parameters.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind))
        fields.append((field.name, decl))
        for old in decl.deprecated:
            deprecated[old] = " / ".join(f for f in decl.flags if f.startswith("--"))
    if force is not None:
        parameters.append(inspect.Parameter("force", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                                            default=typer.Option(False, "--force", help=f"Overwrite {force}.")))

    def run(**given: Any) -> Any:
        values = {}
        for name, decl in fields:
            value = given[name]
            if decl.parse is not None and value is not None:
                try:
                    value = decl.parse(value)
                except ValueError as exc:
                    raise typer.BadParameter(str(exc), param_hint=decl.name) from None
            elif isinstance(value, tuple) or (value is None and typing.get_origin(hints[name]) is list):
                value = list(value or ())
            values[name] = value
        return body(cls(**values), given.get("force", False))

    run.__name__, run.__doc__ = body.__name__, body.__doc__
    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run, deprecated
