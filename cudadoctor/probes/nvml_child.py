"""The helper process of a live ``check``: NVML queried apart from the doctor's own process.

:func:`cudadoctor.probes.native.start_early` runs ``python -S -I -c <bootstrap> <package root> <0|1>``
(:func:`cudadoctor.runner.helper_command`): an
interpreter without site-packages (so none of their ``.pth`` start-up hooks run) that imports only this
module, :mod:`cudadoctor.probes.nvml_calls`, the NVML binding and, with ``1``, the health query (never ``typing``,
``json`` or ``re``: a test holds it to that). It prints one
Python literal (a dict of str, int, float, bool, None, lists and dicts: ``{"nvml": …, "health": …}``), the answers
the probes would have got in-process; the doctor reads it with ``ast.literal_eval``, which evaluates nothing.

Why a process: NVML's init loads libcuda and allocates ~13.5 MB (18 MB of resident memory in all, measured on
an H200), more than the rest of a ``check``; in a helper that memory is never the doctor's, the calls run on
another core while the checks are imported, and a driver call that never returns is ended by killing the helper.
``cuDriverGetVersion`` stays in the doctor's process (a thread): loading libcuda there costs 3 MB, which would push
the helper past 30 MB.
"""

from __future__ import annotations

import sys

__all__ = ["finite", "main"]


def main(argv: list[str]) -> None:
    """Print the answers; ``argv[0] == "1"`` adds NVML's health answers.

    Not JSON: the ``json`` module and the ``re`` it imports would cost 1.2 MB of a helper whose floor (``python -S``,
    ctypes, an initialised NVML) is 28.75 MB on the H200 (measured), against the 30 MB budget of issue #13.
    """
    from cudadoctor.probes.nvml_calls import query_nvml

    out: dict[str, object] = {}
    health = argv[:1] == ["1"]
    if health:
        # The health answers are asked in a second thread (``_thread``: ``threading`` imports ``collections``) while
        # this one asks the driver's: NVML is thread-safe, and on an H200 the first health queries take ~17 ms
        # and the driver's ~8 ms, one after the other (measured). NVML is initialised first, here, so the two
        # threads' own (reference-counted) inits never race to do the work.
        import _thread

        from cudadoctor.probes.nvml_calls import initialise
        from cudadoctor.probes.nvml_health import query_health

        initialise()
        done = _thread.allocate_lock()
        done.acquire()

        def ask_health() -> None:
            try:
                out["health"] = query_health()
            finally:
                done.release()

        _thread.start_new_thread(ask_health, ())
    out["nvml"] = query_nvml()
    if health:
        done.acquire()  # the health thread has answered
    sys.stdout.write(ascii(finite(out)))  # ASCII: whatever the locale's encoding
    sys.stdout.flush()


def finite(value: object) -> object:
    """``value`` with every NaN or infinite float replaced by None: ``ast.literal_eval`` reads no ``nan``/``inf``,
    and one such reading would throw away every answer."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value
