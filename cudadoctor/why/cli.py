"""``cudadoctor why`` on the command line: its help and the body typer calls.

Its parameters are declared with every other command's in :mod:`cudadoctor.cli_options`: its own argument and
options, and every option of ``check`` less those that shape check's own output (``--format``, whose values are
report formats, and ``--output``), so an option added to ``check`` reaches ``why`` with no edit here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HELP", "why"]

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


def why(*, error: tuple[str, ...] | None, file: str | None, why_format: str, **check: Any) -> int:
    """The body typer runs: the error (its arguments, or ``--file``) and check's options, to :func:`why_command`."""
    from cudadoctor.commands import check_options
    from cudadoctor.why.command import why_command

    return why_command(tuple(error or ()), file, check_options(check), why_format)
