"""Where output meets the terminal: whether to colour it, the characters it can show, its width.

The conventions are the ones pip, uv and git follow, so a CI log, a pager and a script see what they expect:

* ``--color auto|always|never`` (and ``--no-color``), anywhere on the command line, as uv takes it
  (https://docs.astral.sh/uv/reference/cli/#uv--color; :func:`cudadoctor.commands.take_color_options` takes
  them, as :mod:`cudadoctor.cli_options` declares them);
* in ``auto``: ``NO_COLOR`` set to anything but the empty string turns colour off (https://no-color.org/; it
  wins over the next two, as in uv), ``FORCE_COLOR`` (set and not empty, https://force-color.org/) or
  ``CLICOLOR_FORCE`` (set and not ``0``, https://bixense.com/clicolors/) turn it on where the output is not a
  terminal, ``TERM=dumb`` turns it off (a terminal that
  understands no escape sequences: Emacs' shell, some CI consoles), else colour only on a terminal;
* a stream whose encoding cannot show the report's marks (``LANG=C`` on an old system, a Windows code page)
  gets ASCII stand-ins that stay distinct: ``[✓]`` becomes ``[+]`` and ``[✗]`` ``[x]``, so an error never reads
  as ``[?]`` (could not judge), which is what the codec's plain ``replace`` would have printed.

Nothing here imports more than the standard library's ``codecs``: it runs before every command.
"""

from __future__ import annotations

import codecs
import enum
import errno
import io
import os
import sys
from collections.abc import Mapping
from typing import TextIO

from cudadoctor.errors import UsageError

__all__ = [
    "ASCII_ERRORS",
    "ColorMode",
    "color_mode",
    "parse_color_mode",
    "prepare_streams",
    "set_color_mode",
    "terminal_width",
    "wants_color",
]


class ColorMode(str, enum.Enum):
    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


_mode = ColorMode.AUTO


def set_color_mode(mode: ColorMode) -> None:
    """The mode the command line asked for (``--color``/``--no-color``), for every stream of this process."""
    global _mode
    _mode = mode


def color_mode() -> ColorMode:
    return _mode


def wants_color(stream: TextIO, env: Mapping[str, str] | None = None, mode: ColorMode | None = None) -> bool:
    """Whether to colour what goes to ``stream``, by the rules in the module's docstring."""
    mode = _mode if mode is None else mode
    if mode is not ColorMode.AUTO:
        return mode is ColorMode.ALWAYS
    env = os.environ if env is None else env
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", "") or env.get("CLICOLOR_FORCE", "") not in ("", "0"):
        return True
    if env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def parse_color_mode(value: str) -> ColorMode:
    """The mode ``--color VALUE`` names; any value other than auto, always or never is a usage error."""
    try:
        return ColorMode(value.strip().lower())
    except ValueError:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise UsageError(f"--color {shown!r}: expected auto, always or never") from None


#: ASCII stand-ins for the characters cudadoctor prints; every mark keeps a character of its own.
_ASCII = {
    "✓": "+", "✗": "x", "•": "*", "…": "...", "—": "-", "–": "-", "→": "->", "←": "<-", "·": "-", "×": "x",
    "≥": ">=", "≤": "<=", "µ": "u", "²": "2", "✅": "[+]", "❌": "[x]", "⚠": "[!]", "❔": "[?]", "➖": "[-]",
    "\ufe0f": "",
}  # fmt: skip

#: The codec error handler :func:`prepare_streams` installs: the stand-ins above, "?" for anything else.
ASCII_ERRORS = "cudadoctor-ascii"


def _ascii_stand_in(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(_ASCII.get(ch, "?") for ch in text), error.end


codecs.register_error(ASCII_ERRORS, _ascii_stand_in)


class _ClosedStdout(io.TextIOBase):
    """Standard output closed before the start (``cudadoctor check >&-``: Python then has ``sys.stdout = None``): a
    write to it is a reader gone, answered as a closed pipe is (quietly, exit 141); a run that writes nothing there
    (``check -o FILE``) ends as usual."""

    def write(self, text: str) -> int:
        if text:
            raise BrokenPipeError(errno.EPIPE, "standard output is closed")
        return 0

    encoding = "utf-8"


class _Discard(io.TextIOBase):
    """Standard error closed before the start (``2>&-``): its lines go nowhere, never to standard output."""

    def write(self, text: str) -> int:
        return len(text)

    encoding = "utf-8"


def _closed_streams() -> None:
    """Stand in for a standard stream that was closed before the start (None in ``sys``), so that nothing fails
    with an internal error on it (issue #27: "'NoneType' object has no attribute 'flush'", exit 3)."""
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    if sys.stderr is None:
        sys.stderr = _Discard()


def prepare_streams() -> None:
    """Make stdout and stderr print whatever a report holds: a character the stream's encoding cannot show
    becomes its ASCII stand-in (a file name that is not UTF-8, a surrogate escape, becomes "?"), never an
    internal error; a stream closed before the start gets a stand-in (:func:`_closed_streams`)."""
    _closed_streams()
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=ASCII_ERRORS)


def terminal_width(stream: TextIO, default: int = 100) -> int | None:
    """The columns of the terminal ``stream`` writes to (``COLUMNS`` first, as Python's shutil reads it), or
    None when it is not a terminal: text is wrapped for a person, never for a file or a pipe."""
    try:
        if not stream.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError):
        return default
