"""Every check, driven with facts outside the data: it may not end OK where it could not have judged.

Issue #17 ("Done when"): the H200's facts with every data key moved outside compat/: a driver branch
no table knows (999), a GPU of an unknown model and compute capability (99.0), framework builds of
unknown releases for an unknown CUDA (99.0, ``cu990``), vLLM of an unknown release, toolkits and
libraries of unknown versions. A check that consults compat data must end *could not judge* or *not
applicable* (a problem that follows from the facts alone is allowed); only checks that judge facts
against facts may end OK, and each says here why.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from packaging.version import Version

from cudadoctor.checks import ALL_CHECKS
from cudadoctor.checks.findings import Status
from cudadoctor.data import CompatMatrix
from cudadoctor.facts.model import DriverVersion, Facts, InstalledPackage
from cudadoctor.testing import run_check

#: Checks that need no compat table for their verdict: out-of-data facts can leave them OK.
JUDGED_FROM_FACTS = {
    "CD101": "the kernel module's version against the user-space driver's",
    "CD102": "cuda-compat libcuda copies against the kernel module's version",
    "CD103": "whether the loaded libcuda is the toolkit's stub",
    "CD104": "CUDA_VISIBLE_DEVICES against the GPUs present",
    "CD111": "the driver's own CUDA (NVML reads 99.0) covers builds for CUDA 99.0: no floor is needed for that",
    "CD202": "the build toolkit's CUDA (99.0.1) against the driver's own (99.0): facts against facts",
    "CD120": "the container's device nodes and injected libcuda against the kernel module's presence",
    "CD136": "a GPU that answered or the nvidia module loaded, against the PCI bus (the device table only names it)",
    "CD105": "forward compatibility is only in effect with a newer cuda-compat libcuda loaded (none here)",
    "CD301": "the CUDA majors of the installed nvidia-* wheels against each other",
    "CD302": "the cuDNN/NCCL copies that load against the wheels the frameworks pin (its data-backed parts, cuDNN's "
    "sub-libraries and torch 1.x's bundled cuDNN, end could not judge outside the data: test_cudnn_copies.py)",
    "CD303": "the CUDA libraries CuPy/TensorRT find against the major their own name states",
    "CD402": "the torch build's variant against the GPUs present",
    "CD423": "torchvision's / torchaudio's CUDA build against torch's: the same cuXYZ fits whatever the release",
    "CD701": "the driver's own CUDA (99.0) meets `cuda>=13.0` of the image's NVIDIA_REQUIRE_CUDA: facts against "
    "facts; the GPU-brand data it consults for an older driver ends could not judge outside the data "
    "(test_cd701_never_guesses_the_brand_of_an_unknown_gpu)",
    "CD702": "the spelling of NVIDIA_DISABLE_REQUIRE",
    "CD902": "the dates of the data itself",
}

#: Checks that end OK on out-of-data facts although part of their verdict rests on data (other owners'
#: checks; issue #17 item 1). Strict: fixing one makes its entry fail here, so the list stays exact.
KNOWN_GAPS: dict[str, str] = {}

UNKNOWN_CUDA = "99.0"


def _unknown_build(name: str, pkg: InstalledPackage) -> InstalledPackage:
    """A framework build of a release and CUDA no table knows."""
    build = replace(pkg.torch_build, version=Version("99.1.0+cu990"), cuda=UNKNOWN_CUDA) if pkg.torch_build else None
    variant = "cu990" if (pkg.cuda_variant or "").startswith("cu") else pkg.cuda_variant
    return replace(pkg, version=Version("99.1.0"), cuda_variant=variant, cuda_build=UNKNOWN_CUDA, torch_build=build)


def out_of_data(facts: Facts) -> Facts:
    """``facts`` with every key compat data is indexed by moved outside it."""
    packages = {
        name: _unknown_build(name, pkg) if pkg.cuda_build and not name.startswith(("nvidia-", "cuda-")) else pkg
        for name, pkg in facts.packages.items()
    }
    for name in ("jax", "jaxlib"):  # released together with the plugin
        if name in packages:
            packages[name] = replace(packages[name], version=Version("99.1.0"))
    torch = packages["torch"]
    packages["vllm"] = InstalledPackage("vllm", Version("99.1.0"), torch.location, torch.source, "cu990", UNKNOWN_CUDA)
    assert facts.driver is not None
    new = DriverVersion("999.12.01")
    readings = tuple(
        replace(r, version=new if r.version else None, cuda_api=Version(UNKNOWN_CUDA) if r.cuda_api else None)
        for r in facts.driver.readings
    )
    module = replace(facts.driver.kernel_module, version=new) if facts.driver.kernel_module else None
    driver = replace(facts.driver, version=new, cuda_api=Version(UNKNOWN_CUDA), kernel_module=module, readings=readings)
    gpus = tuple(replace(g, name="NVIDIA Future GPU 9000", compute_capability="99.0") for g in facts.gpus)
    toolkits = tuple(replace(t, version=Version("99.0.1")) for t in facts.toolkits)
    cudnn, nccl, tensorrt = (
        tuple(replace(c, version=Version("99.1.0")) for c in copies)
        for copies in (facts.cudnn, facts.nccl, facts.tensorrt)
    )
    return replace(
        facts, packages=packages, driver=driver, gpus=gpus, toolkits=toolkits, cudnn=cudnn, nccl=nccl, tensorrt=tensorrt
    )


def test_the_lists_name_registered_checks_only():
    assert set(JUDGED_FROM_FACTS) | set(KNOWN_GAPS) <= set(ALL_CHECKS)
    assert not set(JUDGED_FROM_FACTS) & set(KNOWN_GAPS)


@pytest.mark.parametrize("code", sorted(ALL_CHECKS))
def test_no_check_passes_what_it_could_not_judge(code, h200, request):
    if code in JUDGED_FROM_FACTS:
        pytest.skip(f"{code} judges facts against facts: {JUDGED_FROM_FACTS[code]}")
    if code in KNOWN_GAPS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_GAPS[code], strict=True))
    finding = run_check(code, out_of_data(h200), CompatMatrix(cache_dir=False))
    assert finding.status is not Status.OK, f"{code} ended OK on facts outside the data"
    if finding.status in (Status.UNKNOWN, Status.NOT_APPLICABLE):
        assert finding.reason, f"{code} must say what was missing or why it does not apply"


def test_cd701_never_guesses_the_brand_of_an_unknown_gpu(h200: Facts) -> None:
    """A 535 driver (CUDA 12.2) under the H200 image's `cuda>=13.0 brand=…,driver>=535,driver<536` alternatives:
    only the GPU's brand decides. NVML gave none; compat/gpus.toml knows a T4 (Tesla: met) and a GeForce (not
    met) but not a future GPU, whose brand must not be guessed either way."""
    assert h200.driver is not None
    older = replace(
        out_of_data(h200),
        driver=replace(h200.driver, version=DriverVersion("535.104.05"), cuda_api=Version("12.2")),
    )

    def on(name: str, cc: str) -> Status:
        gpus = tuple(replace(g, name=name, compute_capability=cc, brand=None) for g in older.gpus)
        return run_check("CD701", replace(older, gpus=gpus), CompatMatrix(cache_dir=False)).status

    assert on("NVIDIA Future GPU 9000", "99.0") is Status.UNKNOWN
    assert on("Tesla T4", "7.5") is Status.OK
    assert on("NVIDIA GeForce RTX 4090", "8.9") is Status.FAIL
