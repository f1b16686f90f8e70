"""The fix commands a corpus case prints: each verified against compat data and what the case has installed,
and compared with the thread's accepted fix (``fix`` in case.toml).

The comparison is mechanical where the accepted fix holds a pip/uv command: some install the accepted fix
makes (its first package) must be made by a printed command of an expected finding, with the same CUDA major
where both say one (a ``+cu118`` local version, a ``/whl/cu118`` index, the release's PyPI build) and the same
version where both pin one. A case records the outcome, or overrides it with its reason, in case.toml:
``fix_equivalent = true|false`` and ``fix_note``; the corpus test holds the record to the comparison.
Where the accepted fix holds no pip command the comparison is None and the case's record is its verdict,
judged by reading the printed fix (tests/corpus/fixjudged.py holds the record to the text it was judged on).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from cudadoctor.data import CompatMatrix
from cudadoctor.facts.names import canonical_name
from cudadoctor.fixes import Install, Pin, Steps
from cudadoctor.fixes.machine import verify_on
from cudadoctor.fixes.parse import UnreadCommand, parse
from cudadoctor.fixes.releases import index_variant
from cudadoctor.fixes.verify import Verification
from tests.corpus.replay import Outcome

#: a pip/uv command inside prose, up to where the prose goes on
_COMMAND = re.compile(r"(?:[A-Z_]+=\S+\s+)*(?:python3? -m pip|pip3?|uv pip) (?:install|uninstall)\b[^()]*")
_PROSE = re.compile(r"\s(?:and|or|so|for|from|into|as|until|before|then|which|with)\s|[;,]\s|\.\s|\.$")
_WHEEL_FILE = re.compile(r"^([A-Za-z0-9_.]+)-([^-]+)-.*\.whl$")


@dataclass(frozen=True)
class Printed:
    """One printed pip/uv command, as verified."""

    code: str
    command: str
    verification: Verification | None  #: None: it could not be read back into the model
    unread: str = ""


def printed(outcome: Outcome, matrix: CompatMatrix, codes: set[str] | None = None) -> list[Printed]:
    """Every pip/uv command the findings print (those of ``codes`` only, when given), verified."""
    assert outcome.facts is not None
    out = []
    for finding in outcome.findings:
        if finding.remediation is None or (codes is not None and finding.code not in codes):
            continue
        for line in finding.remediation.commands:
            try:
                command = parse(line)
            except UnreadCommand as error:
                out.append(Printed(finding.code, line, None, str(error)))
                continue
            if command is not None:
                found = verify_on(command, matrix, outcome.facts)
                out.append(Printed(finding.code, line, found))
    return out


def accepted_installs(fix: str) -> list[Install]:
    """The installs the accepted fix's text makes (its pip/uv commands; a wheel file named as its release)."""
    out = []
    for match in _COMMAND.finditer(fix):
        text = _PROSE.split(match.group(0), maxsplit=1)[0].strip().rstrip(".")
        words = [_wheel_pin(w) for w in text.split()]
        try:
            command = parse(" ".join(words))
        except UnreadCommand:
            continue
        steps = command.steps if isinstance(command, Steps) else (command,)
        out += [s for s in steps if isinstance(s, Install)]
    return out


def _wheel_pin(word: str) -> str:
    match = _WHEEL_FILE.match(posixpath.basename(word))
    return f"{match.group(1).replace('_', '-')}=={match.group(2)}" if match else word


def _cuda_major(tag: str | None) -> int | None:
    digits = re.fullmatch(r"cu(\d+)", tag or "")
    if not digits:
        return None
    text = digits.group(1)
    return int(text[:2]) if len(text) >= 3 else int(text[:1])


def _tag(matrix: CompatMatrix, name: str, version: Version | None, command: Install) -> str | None:
    """The CUDA variant an install takes: its local version, its index, else the release's PyPI build."""
    if version is not None and version.local and version.local.startswith("cu"):
        return version.local
    for url in (command.index_url, *command.extra_index_urls):
        if url and (found := index_variant(matrix, url) or _url_tag(url)):
            return found
    release = matrix.torch_release(version) if name == "torch" and version is not None else None
    cuda = release.pypi_default_cuda if release is not None else None
    return f"cu{cuda.major}{cuda.minor}" if cuda is not None else None


def _url_tag(url: str) -> str | None:
    match = re.search(r"/whl/(cu\d+)/?$", url)
    return match.group(1) if match else None


def _version(pin: Pin) -> Version | None:
    """The version an exact pin names (:attr:`Pin.version`), parsed; None for a range or a wheel URL."""
    try:
        return Version(pin.version) if pin.version else None
    except InvalidVersion:
        return None


def _match(matrix: CompatMatrix, accepted: Install, command: Install) -> str | None:
    """Why ``command`` does not make ``accepted``'s first install; None when it does."""
    want = accepted.pins[0]
    name = canonical_name(want.name)
    have = next((p for p in command.pins if canonical_name(p.name) == name), None)
    if have is None:
        return f"installs no {name}"
    want_v, have_v = _version(want), _version(have)
    a_tag, p_tag = _tag(matrix, name, want_v, accepted), _tag(matrix, name, have_v, command)
    if _cuda_major(a_tag) is not None and _cuda_major(p_tag) is not None and _cuda_major(a_tag) != _cuda_major(p_tag):
        return f"{name} for {p_tag}, the accepted fix takes {a_tag}"
    if want_v is not None and have_v is not None and want_v.public != have_v.public:
        return f"{name} {have_v.public}, the accepted fix takes {want_v.public}"
    return None


def compare(case: dict[str, Any], outcome: Outcome, matrix: CompatMatrix) -> tuple[bool | None, str]:
    """(whether a printed command makes the accepted fix's install, why); None when the accepted fix holds
    no pip/uv install to compare with."""
    accepted = accepted_installs(str(case["case"].get("fix", "")))
    if not accepted:
        return None, "the accepted fix holds no pip/uv install"
    codes = {str(e["code"]) for e in case.get("expect", [])}
    commands = []
    for item in printed(outcome, matrix, codes):
        command = parse(item.command) if item.verification is not None else None
        steps = command.steps if isinstance(command, Steps) else (command,) if command else ()
        commands += [s for s in steps if isinstance(s, Install)]
    if not commands:
        return False, "no pip/uv install is printed for the expected findings"
    reasons = []
    for want in accepted:
        for command in commands:
            why = _match(matrix, want, command)
            if why is None:
                return True, f"prints {want.pins[0].text}'s install"
            reasons.append(why)
    return False, "; ".join(dict.fromkeys(reasons))


def fix_equivalent(case: dict[str, Any], outcome: Outcome, matrix: CompatMatrix) -> bool | None:
    """The case's verdict: its recorded override (``fix_equivalent``), else the mechanical comparison."""
    recorded = case["case"].get("fix_equivalent")
    return bool(recorded) if recorded is not None else compare(case, outcome, matrix)[0]


def counts(case: dict[str, Any], outcome: Outcome, matrix: CompatMatrix) -> tuple[bool, str]:
    """(whether the case counts as diagnosed in the figure, why not): its expected codes with a fix, every
    pip/uv command printed for them verified, and a fix the accepted one is equivalent to (compared, or
    recorded: a case neither compared nor recorded does not count)."""
    if not outcome.diagnosed:
        return False, f"expected {', '.join(outcome.missing)}; reported {', '.join(outcome.errors) or 'no error'}"
    codes = {str(e["code"]) for e in case.get("expect", [])}
    for item in printed(outcome, matrix, codes):
        problems = item.verification.problems if item.verification is not None else ()
        if item.verification is None or problems:
            return False, f"{item.code} prints {item.command}: {item.unread or '; '.join(problems)}"
    if not fix_equivalent(case, outcome, matrix):
        return False, str(case["case"].get("fix_note") or compare(case, outcome, matrix)[1])
    return True, ""
