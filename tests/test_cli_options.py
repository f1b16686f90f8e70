"""Each option of the command line is declared once (cudadoctor/cli_options.py), and both parsers read it there:
typer's parameters are made from it, and the fast path's tables are taken from it."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import pathlib
import re

import pytest

from cudadoctor import cli, cli_options, entry
from cudadoctor.cli_options import CHECK, COMMANDS, GLOBAL, SUGGEST, Param
from cudadoctor.commands import CheckOptions

PKG = pathlib.Path(cli_options.__file__).parent
FLAG = re.compile(r"-{1,2}[A-Za-z][A-Za-z0-9-]*")  # a whole string that is an option's name


def _strings(path: pathlib.Path) -> list[str]:
    return [
        node.value
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_each_flag_is_written_once_in_the_declarations() -> None:
    """An option repeated (``--root`` declared a second time for another command) would show here: a flag is one
    literal of the module; another command takes the declaration, or ``Param.but`` of it."""
    flags = [s for s in _strings(PKG / "cli_options.py") if FLAG.fullmatch(s)]
    assert sorted(flags) == sorted(set(flags))
    declared = {flag for params in (*COMMANDS.values(), GLOBAL) for p in params for flag in p.flags}
    assert set(flags) == declared | set(cli_options.HELP_FLAGS)


def test_a_variant_keeps_its_flags() -> None:
    with pytest.raises(ValueError, match="declared once"):
        cli_options.ROOT.but(flags=("--image",))
    assert cli_options.VERBOSE.but(help="other").flags == cli_options.VERBOSE.flags


@pytest.mark.parametrize("name", [*COMMANDS, "(global)"])
def test_a_command_takes_each_flag_and_name_once(name: str) -> None:
    params = COMMANDS.get(name, GLOBAL)
    flags = [f for p in params for f in p.flags]
    assert len(flags) == len(set(flags))
    assert len({p.dest for p in params}) == len(params)
    assert not set(flags) & {f for p in GLOBAL for f in p.flags} or name == "(global)"
    assert sum(1 for p in params if not p.flags) <= 1  # one argument at most (the fast path's rule as typer's)


def test_typer_options_are_made_in_one_place() -> None:
    """No ``typer.Option``/``typer.Argument`` outside cli.py's converter: every other one would be a second
    declaration."""
    made = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("typer.Option", "typer.Argument"):
                made.append((str(path.relative_to(PKG)), node.lineno))
    lines, start = inspect.getsourcelines(cli._parameter)
    assert made and all(path == "cli.py" and start <= line < start + len(lines) for path, line in made)


@pytest.mark.parametrize("module", ["entry.py", "commands.py", "cli.py", "why/cli.py"])
def test_the_parsers_name_no_flag_of_their_own(module: str) -> None:
    """The fast path's tables (and typer's commands) hold no flag: each comes from the declarations."""
    assert [s for s in _strings(PKG / module) if FLAG.fullmatch(s)] == []


def _form(param: Param) -> list[str]:
    """A command line giving ``param`` a valid value (not its default; not the matrix's format)."""
    if param.kind == "flag":
        return [param.flags[0]]
    value = param.choices[1] if param.choices else {"int": "1", "float": "1.5"}.get(param.kind, "x")
    return [param.flags[0], value] if param.flags else [value]


@pytest.mark.parametrize("param", CHECK, ids=lambda p: p.dest)
def test_the_fast_path_takes_check_options_by_their_declaration(param: Param) -> None:
    """Every flag of a declaration the fast path takes is taken, in every spelling; the others go to typer."""
    taken = param.dest in entry._FAST_CHECK
    for flag in param.flags:
        form = ["check", flag, *_form(param)[1:]]
        assert (entry.fast_check_options(form) is not None) == taken, form


@pytest.mark.parametrize("param", SUGGEST, ids=lambda p: p.dest)
def test_the_fast_path_takes_suggest_options_by_their_declaration(param: Param) -> None:
    taken = param.dest in entry._FAST_SUGGEST
    target = [] if param.dest in ("what", "target") else ["torch"]
    for flag in param.flags or ("",):
        form = ["suggest", *target, *([flag] if flag else []), *_form(param)[1 if flag else 0 :]]
        assert (entry.fast_suggest_args(form) is not None) == taken, form
    assert {p.dest for p in SUGGEST} >= entry._FAST_SUGGEST
    assert {p.dest for p in CHECK} >= entry._FAST_CHECK


def test_check_options_are_the_declarations() -> None:
    """CheckOptions (the typed values the bodies read) has one field per declaration of check, with its default."""
    fields = {f.name: f.default for f in dataclasses.fields(CheckOptions)}
    assert fields == {p.dest: p.default for p in CHECK}


def _choices(command: str) -> tuple[str, ...]:
    (found,) = [p.choices for p in COMMANDS[command] if p.kind == "choice"]
    return found


def test_values_declared_elsewhere_agree() -> None:
    """The values an option takes are those its body knows (the bodies' tables are not imported by the fast
    path)."""
    from cudadoctor.assume import ROOT_KINDS
    from cudadoctor.catalog import EXPLAIN_FORMATS, LIST_FORMATS
    from cudadoctor.compare.render import FORMATS

    assert cli_options.ROOT_KIND.choices == ROOT_KINDS
    assert _choices("list-checks") == tuple(LIST_FORMATS)
    assert _choices("explain") == tuple(EXPLAIN_FORMATS)
    assert _choices("compare") == tuple(FORMATS)


@pytest.mark.parametrize("param", [p for p in GLOBAL if p.dest in ("color", "no_color")], ids=lambda p: p.dest)
def test_the_colour_options_are_taken_anywhere_as_declared(param: Param) -> None:
    """commands.take_color_options takes the colour options out of the command line before either parser: it
    takes exactly the flags declared."""
    from cudadoctor.commands import take_color_options
    from cudadoctor.terminal import ColorMode, set_color_mode

    try:
        for flag in param.flags:
            assert take_color_options(["check", flag, *_form(param)[1:]]) == ["check"]
    finally:
        set_color_mode(ColorMode.AUTO)


def test_every_declared_command_is_registered() -> None:
    registered = {c.name for c in cli.app.registered_commands}
    assert registered == set(COMMANDS)
