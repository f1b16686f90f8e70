"""``cudadoctor why`` on the command line: its own argument and options, and every option of ``check``.

The options of ``check`` are not declared again: :func:`register` reads ``check``'s signature and gives
``why`` the same parameters (an option added to ``check`` reaches ``why`` with no edit here), less those that
shape check's own output (``--format``, whose values are report formats, and ``--output``).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

__all__ = ["register"]

#: check's parameters that ``why`` does not take: it has its own --format, and prints one answer.
NOT_TAKEN = frozenset({"output_format", "output"})

HELP = """Start from the error you have: recognise it, run the checks that decide its cause, name the cause.

The error is matched against a catalogue of CUDA-stack error messages with public sources
(compat/error_messages.toml: CUDA's error enum, ld.so, cuDNN, NCCL, cuBLAS, PyTorch, Triton, ONNX Runtime,
TensorFlow, JAX, vLLM, bitsandbytes, nvidia-smi, kernel Xid lines). Each message comes from a few families
of causes; the checks that decide them run on this machine (or --root, --from, as check does), and the
answer is the cause check found, with its fix, or the causes left open and the one fact that would decide.
An error it does not know: it says so and prints check's report. Takes every option check takes.

Examples:

\b
  cudadoctor why "CUDA driver version is insufficient for CUDA runtime version"
  cudadoctor why --file job.log              # a long log: its first 1 MiB and last 3 MiB
  journalctl -k | cudadoctor why --file -    # kernel Xid lines from standard input
  cudadoctor why --from node7.json "Failed to initialize NVML: Driver/library version mismatch"
  cudadoctor why --root ./rootfs --env-file image.env "libcudnn.so.9: cannot open shared object file"
  cudadoctor why --deep "CUDA error: no kernel image is available for execution on the device"

Exit status as check: 0 no errors, 1 errors found, 2 usage error, 3 cudadoctor could not produce a report.
"""


class WhyFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


def _own_parameters() -> list[inspect.Parameter]:
    keyword = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return [
        inspect.Parameter("error", keyword, default=None, annotation=Annotated[
            list[str] | None,
            typer.Argument(metavar="[ERROR]...", help="The error text, quoted; several arguments are several lines."),
        ]),
        inspect.Parameter("file", keyword, default=None, annotation=Annotated[
            str | None,
            typer.Option("--file", metavar="LOG", help="Read the error from a log file; - reads standard input."),
        ]),
        inspect.Parameter("why_format", keyword, default=WhyFormat.TEXT, annotation=Annotated[
            WhyFormat, typer.Option("--format", "-f", help="text for people; json for tools (with check's report).")
        ]),
    ]  # fmt: skip


def register(app: typer.Typer, check: Callable[..., Any], guarded: Callable[[Callable[..., Any]], Any]) -> None:
    """Add ``why`` to ``app`` with ``check``'s options; ``guarded`` wraps the body as every command's is."""
    taken = [p for p in inspect.signature(check, eval_str=True).parameters.values() if p.name not in NOT_TAKEN]

    def why(**kwargs: Any) -> int:
        from cudadoctor.commands import CheckOptions
        from cudadoctor.why.command import why_command

        error, file, fmt = kwargs.pop("error"), kwargs.pop("file"), kwargs.pop("why_format")
        options: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
        return why_command(tuple(error or ()), file, CheckOptions(**options), WhyFormat(fmt).value)

    why.__signature__ = inspect.Signature([*_own_parameters(), *taken])  # type: ignore[attr-defined]
    app.command("why", help=HELP)(guarded(why))
