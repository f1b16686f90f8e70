"""The errors a refresh raises: one root (:class:`UpdateError`) and the failure of one GET."""

from __future__ import annotations

from cudadoctor.errors import CudadoctorError
from cudadoctor.pipconfig import redacted

__all__ = ["FetchError", "PackagesNotFound", "UpdateError"]


class UpdateError(CudadoctorError):
    """The index could not be read, or what it served is not usable; the previous cache is untouched."""

    exit_code = 3


class PackagesNotFound(UpdateError):
    """None of the packages asked for is on the index (a wrong index, or names that do not exist)."""

    def __init__(self, message: str, names: tuple[str, ...]) -> None:
        super().__init__(message)
        self.names = names


class FetchError(UpdateError):
    """One URL could not be fetched. ``status`` is the HTTP status when there was one (404 means "not there")."""

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = redacted(url)
        self.status = status
