"""How a report is to be rendered (not what it says: that is the :class:`~cudadoctor.report.document.Report`)."""

from __future__ import annotations

from cudadoctor.record import record

__all__ = ["RenderOptions"]


@record
class RenderOptions:
    """How a report is rendered: verbosity, colour and the terminal's width."""

    verbose: bool = False  #: every fact and its source (text)
    color: bool = False  #: ANSI colours (text)
    #: the terminal's columns, to wrap the text report's finding lines at (commands are never wrapped); None: a
    #: file or a pipe, never wrapped
    width: int | None = None
    #: the facts were read from a snapshot (``check --from``), not gathered by this run
    from_snapshot: bool = False
