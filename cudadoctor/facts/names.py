"""Distribution names as one form, so ``NVIDIA_CUDNN_CU12``, ``nvidia.cudnn-cu12`` and ``nvidia-cudnn-cu12``
are the same package everywhere (probes, checks, the update cache); and the distributions of interest, whose
``METADATA`` the packages probe reads and the checks may judge."""

from __future__ import annotations

import re

__all__ = ["INTERESTING_NAMES", "INTERESTING_PREFIXES", "canonical_name", "is_interesting"]

_SEPARATORS = re.compile(r"[-_.]+")


def canonical_name(name: str) -> str:
    """A distribution name normalised as PEP 503 says (``NVIDIA_CUDNN_CU12`` -> ``nvidia-cudnn-cu12``).

    The same rule as :func:`packaging.utils.canonicalize_name`
    (https://packaging.python.org/en/latest/specifications/name-normalization/), written out because
    importing ``packaging.utils`` pulls in ``packaging.tags`` (about 15 ms, a tenth of the time budget).
    """
    return _SEPARATORS.sub("-", name).lower()


#: Distributions whose METADATA is read: the frameworks and libraries whose CUDA build matters
#: (their wheels bundle or pin a CUDA version) and the CUDA pieces pip can install. Every other
#: distribution is only listed by directory name, which is what keeps the scan cheap with hundreds
#: of packages installed. ``mlx`` (Apple Silicon) and the ROCm builds are kept so that a non-CUDA
#: accelerator stack is recognisable from the facts.
INTERESTING_NAMES = frozenset(
    {
        "torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "pytorch-triton-rocm",
        "vllm", "flash-attn", "xformers", "deepspeed", "bitsandbytes",
        "flashinfer", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache",
        "jax", "jaxlib",
        "jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda12-pjrt", "jax-cuda13-pjrt",
        "tensorflow", "tf-nightly",
        "cupy",
        "onnxruntime", "onnxruntime-gpu",
        "cuda-toolkit", "cuda-bindings", "cuda-python", "cuda-pathfinder", "cuda-core",
        "pynvml", "numba-cuda",
        "paddlepaddle-gpu", "ctranslate2", "faster-whisper", "llama-cpp-python",
        "ray",  # sets CUDA_VISIBLE_DEVICES for its tasks (cudadoctor/rules/scheduler.py)
        "mlx", "mlx-metal", "mlx-cuda",
    }
)  # fmt: skip

#: Name prefixes of interesting distributions (canonical names): every ``nvidia-*`` wheel
#: (``nvidia-cudnn-cu13``, ``nvidia-ml-py`` …), ``tensorflow-*``, ``tensorrt*`` (``tensorrt-cu12``,
#: ``tensorrt-llm``), ``cupy-cuda*`` / ``cupy-rocm-*``, ``mxnet-cu*`` and ``jax-rocm*``.
INTERESTING_PREFIXES = (
    "nvidia-", "tensorflow-", "tensorrt", "cupy-cuda", "cupy-rocm", "mxnet-cu", "jax-rocm",
)  # fmt: skip


def is_interesting(name: str) -> bool:
    """Whether a canonical distribution name is one whose METADATA is read."""
    return name in INTERESTING_NAMES or name.startswith(INTERESTING_PREFIXES)
