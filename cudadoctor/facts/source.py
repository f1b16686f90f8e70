"""Where a fact was read: the :class:`Source` every group of facts carries.

Its own module so that the parts of the model (:mod:`cudadoctor.facts.model`, :mod:`cudadoctor.facts.runtime`)
name it without importing each other; :mod:`cudadoctor.facts.model` re-exports it.
"""

from __future__ import annotations

import enum

from cudadoctor.record import record

__all__ = ["Source", "SourceKind"]


class SourceKind(str, enum.Enum):
    """Where a fact was read."""

    FILE = "file"  #: a file's contents (``/proc/driver/nvidia/version``, a header, ``version.json``)
    FILENAME = "filename"  #: a file's name (``libcuda.so.580.95.05``, a ``*.dist-info`` directory)
    COMMAND = "command"  #: a command's output (``nvidia-smi …``, ``nvcc --version``)
    API = "api"  #: a library call (NVML, ``cuDriverGetVersion``)
    METADATA = "metadata"  #: Python package metadata (dist-info ``METADATA``)
    ENV = "env"  #: an environment variable
    ASSUMED = "assumed"  #: given on the command line (``--assume-driver``, ``--assume-gpu``)
    RUNTIME = "runtime"  #: reported by a child process at run time (``check --deep``)


@record
class Source:
    """The place one fact was read."""

    kind: SourceKind
    #: The path, API call or command line, e.g. ``/sys/module/nvidia/version``.
    where: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.where}"
