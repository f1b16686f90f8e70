"""The body of ``cudadoctor update``: the refresh with its progress on stderr, its warnings and its summary line."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from cudadoctor.errors import UsageError

__all__ = ["update_command"]


def update_command(packages: Sequence[str] | None, *, index_url: str | None, cache_dir: str | None, limit: int) -> int:
    """Refresh ``packages`` (default: :data:`cudadoctor.update.DEFAULT_PACKAGES`) from the configured index into
    the cache; 2 when a name typed is neither on the index nor one cudadoctor knows (a typo), else 0."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from cudadoctor.pipconfig import configured_index
    from cudadoctor.update import DEFAULT_PACKAGES, default_cache_dir, refresh
    from cudadoctor.update.errors import PackagesNotFound

    if limit < 1:
        raise UsageError("--limit must be at least 1")
    index = configured_index(os.environ, explicit=index_url)
    for problem in index.problems:
        print(f"cudadoctor: warning: {problem}", file=sys.stderr)
    target = cache_dir or default_cache_dir()
    console = Console(stderr=True)
    console.print(f"Reading {index.display} ({index.source}) …", highlight=False, markup=False)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=console, transient=True
    ) as bar:
        task = bar.add_task("index pages", total=None)

        def progress(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label)

        try:
            names = packages or DEFAULT_PACKAGES
            result = refresh(names, index=index, cache_dir=target, progress=progress, limit=limit)
        except PackagesNotFound as exc:
            unknown = _unknown_names(exc.names)
            if not unknown:  # names cudadoctor knows are on PyPI: the index is wrong (exit 3)
                raise
            raise UsageError(f"{exc}{_known_package_hint(unknown)}") from None
    for warning in result.warnings:
        print(f"cudadoctor: warning: {warning}", file=sys.stderr)
    missing = [s.name for s in result.packages if not s.found]
    for name in missing:
        print(f"cudadoctor: warning: {name}: not on {result.index}{_known_package_hint((name,))}", file=sys.stderr)
    what = f"{result.new} new release record(s)" if result.new else "nothing changed (the cache is up to date)"
    print(f"cudadoctor: {what} from {result.index} in {result.requests} request(s); cache: {result.cache_path}")
    return 2 if _unknown_names(missing) else 0  # a name typed that the index lacks and cudadoctor does not know


def _unknown_names(names: Sequence[str]) -> list[str]:
    """Names that are not among the packages ``update`` refreshes by default (all of them are on PyPI)."""
    from cudadoctor.update import DEFAULT_PACKAGES

    return [n for n in names if n.lower() not in DEFAULT_PACKAGES]


def _known_package_hint(names: Sequence[str]) -> str:
    from cudadoctor.didyoumean import did_you_mean
    from cudadoctor.update import DEFAULT_PACKAGES

    return "".join(did_you_mean(name, DEFAULT_PACKAGES) for name in _unknown_names(names)[:1])
