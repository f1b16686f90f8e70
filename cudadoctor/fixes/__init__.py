"""Fix commands as data: the one place that models, builds, renders, reads back and verifies every pip/uv
command cudadoctor prints (issue #28).

- :mod:`~cudadoctor.fixes.model`: :class:`Pin`, :class:`Install`, :class:`Uninstall`, :class:`Steps`, and
  :func:`render` (the only spelling of a command: flags, quoting, index options, pip vs uv);
- :mod:`~cudadoctor.fixes.build`: the builders checks and ``suggest`` call (an install that really
  replaces what is installed, an uninstall-then-install, pip's and uv's lines of one install);
- :mod:`~cudadoctor.fixes.torch`: the install of one build of a torch release from where compat data says it
  is published (PyTorch's index of the variant, a 1.x links page or extra index, or PyPI);
- :mod:`~cudadoctor.fixes.releases`: what compat data lists as published (releases, indexes, Pythons);
- :mod:`~cudadoctor.fixes.parse`: a printed command read back into the model (for the verifier and tests);
- :mod:`~cudadoctor.fixes.verify`: whether a command names a version, build, index and Python the compat
  data has, and whether pip would change anything given what is installed; :mod:`~cudadoctor.fixes.pins`
  whether it breaks another installed package's pin; :mod:`~cudadoctor.fixes.machine` asks both for the
  examined machine;
- :mod:`cudadoctor.checks.gate` (the engine's last step) withholds a command that cannot work.
"""

from __future__ import annotations

from cudadoctor.fixes.model import Command, Install, Pin, Steps, Tool, Uninstall, render

__all__ = ["Command", "Install", "Pin", "Steps", "Tool", "Uninstall", "render"]
