"""The exceptions cudadoctor raises for problems a user can act on.

Each becomes one line on stderr and an exit code in :mod:`cudadoctor.cli`, the only place that
catches them. Anything else that escapes is a bug and is reported as such.
"""

from __future__ import annotations

__all__ = ["CompatDataError", "CudadoctorError", "SnapshotError", "UsageError"]


class CudadoctorError(Exception):
    """Root of cudadoctor's own errors."""

    #: the process exit code this error maps to
    exit_code = 3


class UsageError(CudadoctorError):
    """A bad option value or combination (exit 2, like any usage error)."""

    exit_code = 2


class SnapshotError(CudadoctorError):
    """A facts snapshot (``--from FILE``) cannot be read or is not a cudadoctor snapshot."""

    exit_code = 2


# cudadoctor.update.UpdateError (a refresh from the package index failed) is also exit code 3.


class CompatDataError(CudadoctorError):
    """The compatibility data in compat/ is missing or invalid."""

    exit_code = 3
