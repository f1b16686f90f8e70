"""Issue #11 item 3: the cuDNN torch 1.x bundles in torch/lib is an installed copy, reported as torch's, with the
version compat/torch.toml gives for that release and variant; a pip nvidia-cudnn copy that torch pins says so.
Replayed from real layouts (the corpus builder: torch 1.12.0+cu116's torch/lib, torch 2.4.0's pinned wheel)."""

from __future__ import annotations

from packaging.version import Version
from pyfakefs.fake_filesystem_unittest import Patcher

from cudadoctor.facts.model import Facts
from cudadoctor.probes.collect import collect_facts
from cudadoctor.report.summary import categories
from tests.conftest import make_ctx
from tests.corpus.builder import build, case_paths, load_case
from tests.corpus.replay import _system


def _facts(case_id: str) -> Facts:
    path = next(p for p in case_paths("cases") + case_paths("healthy") if f"/{case_id}/" in p)
    machine = build(load_case(path))
    with Patcher() as patcher:
        assert patcher.fs is not None
        machine.write("/")
        ctx = make_ctx(env=machine.env, runner=machine.runner, native=machine.native, python=machine.python,
                       machine=machine.machine, system=_system(machine))  # fmt: skip
        return collect_facts(ctx)


def _cudnn_lines(facts: Facts) -> tuple[str, list[str]]:
    cat = next(c for c in categories(facts) if c.key == "cudnn")
    return cat.headline, [line.text for line in cat.lines]


def test_torch_1_12_bundled_cudnn_is_a_copy_owned_by_torch():
    facts = _facts("WSL-8587-libcuda-so-not-in-loader-cache")  # torch 1.12.0+cu116 bundles cuDNN 8.3.2.44
    (copy,) = facts.cudnn
    assert copy.bundled_by == "torch" and copy.version == Version("8.3.2.44")
    assert copy.path.endswith("/torch/lib/libcudnn.so.8")
    assert any(p.endswith("/torch/lib/libcudnn_cnn_infer.so.8") for p in copy.lib_paths)
    headline, lines = _cudnn_lines(facts)
    assert headline == "8.3.2.44 (pip bundled by torch)"
    assert lines[0].startswith("8.3.2.44 pip bundled by torch: ")


def test_pip_cudnn_pinned_by_torch_says_so_and_a_system_copy_does_not():
    headline, _lines = _cudnn_lines(_facts("torch-2-4-0-cu121-pip-wheels-with-unused-system-cudnn8"))
    assert headline == "9.1.0.70 (pip nvidia-cudnn-cu12 pinned by torch), 8.9.7 (system)"


def test_torch_2_has_no_bundled_copy():
    facts = _facts("torch-2-4-0-cu121-pip-wheels-with-unused-system-cudnn8")
    assert all(c.bundled_by is None for c in facts.cudnn)
