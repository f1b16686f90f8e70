"""Which CUDA toolkit torch builds extensions with, and whether its nvcc fits torch and the driver.

torch.utils.cpp_extension picks the toolkit in this order (``_find_cuda_home``,
https://github.com/pytorch/pytorch/blob/main/torch/utils/cpp_extension.py): ``CUDA_HOME``, else
``CUDA_PATH``, else the directory above the first ``nvcc`` on PATH, else ``/usr/local/cuda``. It then runs
``$CUDA_HOME/bin/nvcc -V`` and refuses to build when that CUDA major differs from ``torch.version.cuda``
(``_check_cuda_version``: "The detected CUDA version (…) mismatches the version that was used to compile
PyTorch (…)"); a minor difference only warns. DeepSpeed's op builder
(https://github.com/deepspeedai/DeepSpeed/blob/master/op_builder/builder.py, ``assert_no_cuda_mismatch``)
applies the same rule at JIT time.
"""

from __future__ import annotations

from packaging.version import Version

from cudadoctor.facts.model import NvccInfo, ToolkitInstall
from cudadoctor.record import record
from cudadoctor.rules.verdict import Verdict, cannot_judge, fails, fits

__all__ = ["BuildToolkit", "build_toolkit", "nvcc_matches_torch", "nvcc_runs_on_driver"]

#: Distributions that compile CUDA extensions with torch.utils.cpp_extension at run time (JIT): DeepSpeed's
#: op builder (https://www.deepspeed.ai/tutorials/advanced-install/: ops "JIT compiled at runtime"), and
#: ninja, which torch.utils.cpp_extension.load() requires for any JIT build.
JIT_BUILDERS = ("deepspeed", "ninja")


@record
class BuildToolkit:
    """The toolkit torch would build extensions with, and the nvcc release it holds."""

    root: str
    release: Version  #: ``12.1``: the nvcc release (its ``-V`` "release 12.1"), or the toolkit's major.minor
    chosen_by: str  #: ``CUDA_HOME``, ``CUDA_PATH``, ``nvcc on PATH``, ``/usr/local/cuda``
    where: str  #: where the release was read (the nvcc command, the toolkit's version file)


def _release(version: Version) -> Version:
    return Version(f"{version.major}.{version.minor}")


def _toolkit_release(tk: ToolkitInstall, nvcc: NvccInfo | None) -> tuple[Version, str] | None:
    """An nvcc's release is its toolkit's major.minor: version.json's ``cuda_nvcc`` 12.1.105 is release
    12.1 (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ table 2, each component's version)."""
    if nvcc is not None and nvcc.release is not None and _same_root(tk, nvcc):
        return nvcc.release, str(nvcc.source)
    if tk.nvcc_version is not None:
        return _release(tk.nvcc_version), f"{tk.root}: nvcc {tk.nvcc_version}"
    if tk.version is not None:
        return _release(tk.version), str(tk.source) if tk.source else tk.root
    return None


def _same_root(tk: ToolkitInstall, nvcc: NvccInfo) -> bool:
    return nvcc.path.rsplit("/bin/", 1)[0] in (tk.root, tk.real_path)


def build_toolkit(toolkits: tuple[ToolkitInstall, ...], nvcc: NvccInfo | None) -> BuildToolkit | None:
    """The toolkit torch.utils.cpp_extension would use (see the module docstring); None when none is found."""
    for how in ("CUDA_HOME", "CUDA_PATH"):
        chosen = next((tk for tk in toolkits if how in tk.found_via), None)
        if chosen is not None:
            return _make(chosen, nvcc, how)
    if nvcc is not None:
        root = nvcc.path.rsplit("/bin/", 1)[0]
        holder = next((tk for tk in toolkits if root in (tk.root, tk.real_path)), None)
        if holder is None:
            holder = next((tk for tk in toolkits if "nvcc on PATH" in tk.found_via), None)
        if holder is not None:
            return _make(holder, nvcc, "nvcc on PATH")
        if nvcc.release is not None:
            return BuildToolkit(root, nvcc.release, "nvcc on PATH", str(nvcc.source))
        return None
    fallback = next((tk for tk in toolkits if tk.root == "/usr/local/cuda"), None)
    return _make(fallback, None, "/usr/local/cuda") if fallback is not None else None


def _make(tk: ToolkitInstall, nvcc: NvccInfo | None, how: str) -> BuildToolkit | None:
    found = _toolkit_release(tk, nvcc)
    return BuildToolkit(tk.root, found[0], how, found[1]) if found is not None else None


def nvcc_matches_torch(toolkit: BuildToolkit, torch_cuda: str) -> Verdict[BuildToolkit]:
    """Does torch build extensions with this toolkit: the same CUDA major as ``torch.version.cuda``?"""
    rule = "nvcc-torch-cuda-major"
    try:
        major = Version(torch_cuda).major
    except ValueError:
        return cannot_judge(rule, f"torch's CUDA version ({torch_cuda!r} is not a version)")
    if toolkit.release.major != major:
        observed = f"nvcc CUDA {toolkit.release} ({toolkit.root}, by {toolkit.chosen_by})"
        return fails(rule, observed, f"a CUDA {major}.x nvcc (torch was built with CUDA {torch_cuda})", toolkit)
    return fits(rule, f"nvcc CUDA {toolkit.release} and torch CUDA {torch_cuda} share the major", toolkit)


def nvcc_runs_on_driver(toolkit: BuildToolkit, driver_cuda: Version) -> Verdict[BuildToolkit]:
    """Does code nvcc builds run on a driver that supports CUDA ``driver_cuda``?

    Within a major, minor-version compatibility runs the built SASS but not PTX, which the older driver
    cannot JIT (CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222); across majors nothing runs
    (https://docs.nvidia.com/deploy/cuda-compatibility/#minor-version-compatibility).
    """
    rule = "nvcc-newer-than-driver"
    newest = Version(f"{driver_cuda.major}.{driver_cuda.minor}")
    if toolkit.release <= newest:
        return fits(rule, f"nvcc CUDA {toolkit.release} <= driver CUDA {newest}", toolkit)
    return fails(rule, f"nvcc CUDA {toolkit.release}", f"CUDA {newest} or older (what the driver supports)", toolkit)
