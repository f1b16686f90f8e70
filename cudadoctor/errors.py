"""The exceptions cudadoctor raises for problems a user can act on.

Each becomes one line on stderr and an exit code in :mod:`cudadoctor.cli`, the only place that
catches them. Anything else that escapes is a bug and is reported as such.
"""

from __future__ import annotations

__all__ = ["CompatDataError", "CudadoctorError", "InvalidValue", "SnapshotError", "UsageError"]


class CudadoctorError(Exception):
    """Root of cudadoctor's own errors."""

    #: the process exit code this error maps to
    exit_code = 3


class UsageError(CudadoctorError):
    """A bad option value or combination (exit 2, like any usage error)."""

    exit_code = 2


class InvalidValue(UsageError):
    """A value that does not parse (a driver version, a GPU name, a requirement), said without naming a flag:
    the layer that took the value from a flag or a settings file adds where it came from."""

    def __init__(self, value: str, reason: str) -> None:
        self.value = value
        self.reason = reason
        super().__init__(f"{value[:60]!r}: {reason}")

    def at(self, where: str) -> UsageError:
        """The same problem, said with where the value came from (``--assume-driver``)."""
        return UsageError(f"{where} {self}")


class SnapshotError(CudadoctorError):
    """A facts snapshot (``--from FILE``) cannot be read or is not a cudadoctor snapshot."""

    exit_code = 2


# cudadoctor.update.UpdateError (a refresh from the package index failed) is also exit code 3.


class CompatDataError(CudadoctorError):
    """The compatibility data in compat/ is missing or invalid."""

    exit_code = 3
