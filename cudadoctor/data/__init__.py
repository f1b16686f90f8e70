"""The compatibility data in ``compat/``: typed rows (:mod:`.rows`), loading and validation (:mod:`.load`),
and the questions it answers (:mod:`.queries`)."""

from cudadoctor.data.queries import CompatMatrix, DataDates

__all__ = ["CompatMatrix", "DataDates"]
