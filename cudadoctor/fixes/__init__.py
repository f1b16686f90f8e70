"""Fix commands as data: the one place that models, builds, renders, reads back and verifies every pip/uv
command cudadoctor prints (issue #28).

- :mod:`~cudadoctor.fixes.model`: :class:`Pin`, :class:`Install`, :class:`Uninstall`, :class:`Steps`, and
  :func:`render` (the only spelling of a command: flags, quoting, index options, pip vs uv);
- :mod:`~cudadoctor.fixes.build`: the builders checks and ``suggest`` call (an install that really
  replaces what is installed, an uninstall-then-install, the index a torch build is on);
- :mod:`~cudadoctor.fixes.parse`: a printed command read back into the model (for the verifier and tests);
- :mod:`~cudadoctor.fixes.verify`: whether a command names a version, build, index and Python the compat
  data has, and whether pip would change anything given what is installed.
"""

from __future__ import annotations

from cudadoctor.fixes.model import Command, Install, Pin, Steps, Tool, Uninstall, render

__all__ = ["Command", "Install", "Pin", "Steps", "Tool", "Uninstall", "render"]
