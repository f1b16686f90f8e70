"""The runtime facts of ``check --deep``: what child processes saw when they initialised CUDA.

Each fact here was reported by a child process of the target interpreter (``cudadoctor.probes.runtime``):
one that called the CUDA driver API through ctypes, and one per installed framework that imported it
and ran one small GPU operation. Their :class:`~cudadoctor.facts.model.Source` is ``runtime``. Like the rest
of the facts model these hold no judgements, keep no GPU UUID, and record why something is unknown
instead of guessing.

``Source`` and ``Version`` are named for type checkers only: the facts codec resolves these
annotations in :mod:`cudadoctor.facts.model`'s namespace, which imports the classes below and ``Source``
(:mod:`cudadoctor.facts.source`, which both modules name, so neither imports the other).
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING

from cudadoctor.record import record

if TYPE_CHECKING:
    from packaging.version import Version

    from cudadoctor.facts.source import Source

__all__ = ["DriverApiResult", "FrameworkRuntime", "LoadedLibrary", "NcclSmoke", "RuntimeDevice", "RuntimeInfo"]


@record
class LoadedLibrary:
    """One CUDA library file a child process had mapped (from its ``/proc/self/maps``)."""

    #: the library's short name: ``cuda``, ``cudart``, ``cudnn``, ``cudnn_graph``, ``nccl``, ``cublas``,
    #: ``cublasLt``, ``nvJitLink``, ``nvrtc``, ``nvinfer`` …
    name: str
    path: str  #: the mapped file as the kernel names it (symbolic links resolved)
    #: what follows ``.so.`` in the file name: ``9`` (libcudnn.so.9), ``580.159.04`` (libcuda), ``""`` when none
    suffix: str
    #: where the file lives: ``pip`` (a site-packages directory), ``compat`` (a cuda-compat directory),
    #: ``stub`` (a ``stubs`` directory), ``conda``, ``toolkit`` (under a CUDA toolkit root), ``system``
    origin: str


@record
class RuntimeDevice:
    """A GPU as a child process's CUDA saw it (after ``CUDA_VISIBLE_DEVICES``). No UUID is kept."""

    index: int  #: the ordinal inside that process
    name: str
    compute_capability: str | None  #: ``"9.0"``


@record
class DriverApiResult:
    """The CUDA driver API called directly: ``cuDriverGetVersion``, ``cuInit(0)``, the devices."""

    source: Source
    #: the libcuda file the loader mapped for ``libcuda.so.1``; None when it could not be loaded
    libcuda_path: str | None = None
    #: why ``libcuda.so.1`` could not be loaded (the loader's message)
    load_error: str | None = None
    version_rc: int | None = None  #: CUresult of ``cuDriverGetVersion`` (34 for the stub library)
    cuda_api: Version | None = None  #: the CUDA version that libcuda supports (13000 -> 13.0)
    init_rc: int | None = None  #: CUresult of ``cuInit(0)``; 0 is success
    init_error_name: str | None = None  #: ``cuGetErrorName``: ``CUDA_ERROR_SYSTEM_DRIVER_MISMATCH``
    init_error_string: str | None = None  #: ``cuGetErrorString``, as libcuda words it
    device_count: int | None = None  #: ``cuDeviceGetCount`` after a successful ``cuInit``
    devices: tuple[RuntimeDevice, ...] = ()
    #: device nodes present in the child's view of ``/dev`` (``nvidiactl``, ``nvidia-uvm``, ``nvidia0`` …)
    device_nodes: tuple[str, ...] = ()
    libraries: tuple[LoadedLibrary, ...] = ()
    #: why the child gave no usable answer: it timed out, crashed or printed no result
    error: str | None = None
    #: ``timeout`` / ``crash`` / ``no-output`` / ``not-run`` when ``error`` is set
    error_kind: str | None = None
    seconds: float | None = None  #: wall time of the child process


@record
class FrameworkRuntime:
    """One framework imported in its own child process, with one small GPU operation run."""

    #: ``torch``, ``jax``, ``cupy``, ``vllm``, ``tensorrt``, ``flash-attn``, ``xformers``
    framework: str
    module: str  #: the module imported: ``torch``, ``vllm._C``, ``flash_attn`` …
    distribution: str  #: the installed distribution it was tried for (``cupy-cuda13x``)
    source: Source
    imported: bool = False
    #: the GPU operation gave the right answer (True), failed (False), or was not reached (None)
    gpu_op: bool | None = None
    #: whether the installed build can use an NVIDIA GPU at all (torch: ``version.cuda`` is set);
    #: None when the framework does not say
    gpu_build: bool | None = None
    version: Version | None = None  #: the module's ``__version__`` at run time
    #: the CUDA runtime the framework uses (torch ``version.cuda``; CuPy ``runtimeGetVersion``)
    cuda_runtime: Version | None = None
    cuda_runtime_build: Version | None = None  #: the CUDA runtime it was built against, when it says
    cudnn: Version | None = None  #: cuDNN loaded (torch ``backends.cudnn.version()`` 91900 -> 9.19.0)
    cudnn_build: Version | None = None  #: cuDNN it was compiled against
    nccl: Version | None = None  #: NCCL loaded (torch ``cuda.nccl.version()`` (2, 28, 9) -> 2.28.9)
    nccl_build: Version | None = None  #: NCCL it was compiled against
    #: the GPU code it carries (torch ``cuda.get_arch_list()``: ``sm_90``, ``compute_90`` …)
    arch_list: tuple[str, ...] = ()
    devices: tuple[RuntimeDevice, ...] = ()
    libraries: tuple[LoadedLibrary, ...] = ()
    #: other versions it reported, by name (``torch``: the torch a vLLM or flash-attn child ran with;
    #: ``jaxlib``; ``cuda_driver`` …), as printed
    reported: dict[str, str] = field(default_factory=dict)
    #: ``import`` (the import failed), ``gpu`` (the GPU operation failed), ``timeout``, ``crash``,
    #: ``no-output`` (the child printed no result)
    error_kind: str | None = None
    error: str | None = None  #: one line: ``ImportError: …/_C.abi3.so: undefined symbol: _ZN3c10…``
    undefined_symbol: str | None = None  #: the symbol of an ``undefined symbol`` import error
    missing_library: str | None = None  #: the file of a ``cannot open shared object file`` error
    warnings: tuple[str, ...] = ()  #: Python warnings raised meanwhile (first few, shortened)
    #: the last lines the child wrote to stderr, kept only when it failed
    stderr_tail: str | None = None
    seconds: float | None = None  #: wall time of the child process


@record
class RuntimeInfo:
    """Everything ``check --deep`` learned from child processes of the target interpreter."""

    python: str  #: the interpreter the children ran
    timeout: float  #: seconds each child was allowed
    driver: DriverApiResult | None = None
    #: one per installed framework, in :data:`cudadoctor.probes.runtime.FRAMEWORKS` order
    frameworks: tuple[FrameworkRuntime, ...] = ()
    #: the NCCL all-reduce across the GPUs, when asked for (``--nccl``)
    nccl_smoke: NcclSmoke | None = None


@record
class NcclSmoke:
    """A two-process NCCL all-reduce across the GPUs (``check --deep --nccl``)."""

    source: Source
    world_size: int  #: processes, one per GPU
    ok: bool | None = None  #: every rank saw the right sum; None when it could not be told
    nccl: Version | None = None  #: the NCCL version torch reported in the workers
    error: str | None = None  #: the first rank's failure, one line
    seconds: float | None = None  #: wall time of the slowest worker
