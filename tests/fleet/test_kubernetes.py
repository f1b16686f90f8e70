"""The Kubernetes recipes (examples/kubernetes/): schema-valid manifests, and their scripts run here.

There is no cluster here: every manifest is validated offline against the Kubernetes JSON schemas
(``kubernetes-validate``, the ``fleet`` extra; without it those tests skip and say so), and the shell the pods
run is run on this machine with the pod's paths moved under a temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.fleet.support import EXAMPLES, REPO, cudadoctor_bin

pytestmark = pytest.mark.slow
yaml = pytest.importorskip("yaml", reason="manifests not read: pyyaml is not installed (pip install -e '.[fleet]')")

KUBERNETES = os.path.join(EXAMPLES, "kubernetes")
MANIFESTS = sorted(os.path.join(KUBERNETES, n) for n in os.listdir(KUBERNETES) if n.endswith(".yaml"))
FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"
#: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
LABEL = re.compile(r"^cudadoctor\.feature\.node\.kubernetes\.io/[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?="
                   r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")  # fmt: skip
#: The oldest Kubernetes still in common use and the newest the schemas know.
VERSIONS = ("1.29.0", "latest")


def _documents() -> list[tuple[str, dict]]:
    docs = []
    for path in MANIFESTS:
        with open(path, encoding="utf-8") as handle:
            docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(handle) if d]
    return docs


def _pod_specs() -> list[tuple[str, dict]]:
    return [(f"{name}:{d['metadata']['name']}", d["spec"]["template"]["spec"])
            for name, d in _documents() if d["kind"] in ("DaemonSet", "Job")]  # fmt: skip


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_validates_against_the_kubernetes_schemas(version):
    validate = pytest.importorskip(
        "kubernetes_validate.utils", reason="manifests not validated: kubernetes-validate is not installed "
        "(pip install -e '.[fleet]')"
    )  # fmt: skip
    version = validate.latest_version() if version == "latest" else version
    kinds = set()
    for name, document in _documents():
        try:
            validate.validate(document, version, strict=True)
        except validate.ValidationError as exc:
            pytest.fail(f"{name}: {document['kind']} {document['metadata']['name']}: {exc.message}")
        kinds.add(document["kind"])
    assert {"DaemonSet", "Job"} <= kinds


def test_no_pod_requests_a_gpu_and_every_pod_writes_nfd_feature_files():
    for name, spec in _pod_specs():
        for container in spec.get("containers", []) + spec.get("initContainers", []):
            resources = container.get("resources", {})
            assert not any("gpu" in k for part in resources.values() for k in part), name
        if name.endswith(":cudadoctor-compare"):
            continue
        assert {"path": FEATURES_D, "type": "DirectoryOrCreate"} in [v.get("hostPath") for v in spec["volumes"]], name
    (job,) = [d for _, d in _documents() if d["kind"] == "Job" and d["spec"].get("completionMode") == "Indexed"]
    anti = job["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "kubernetes.io/hostname"


def _script(pod: str) -> str:
    (spec,) = [s for name, s in _pod_specs() if name.endswith(pod)]
    return spec["containers"][0]["command"][-1]


def _run_here(script: str, tmp_path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The pod's script on this machine: its paths under tmp_path, cudadoctor and python3 of this checkout."""
    bindir = cudadoctor_bin(str(tmp_path))
    os.symlink(sys.executable, os.path.join(bindir, "python3"))
    features = tmp_path / "features.d"
    features.mkdir()
    (tmp_path / "reports").mkdir()
    script = script.replace("/tmp/", f"{tmp_path}/").replace("sleep 600", "break")
    script = script.replace(FEATURES_D, str(features)).replace("/reports", str(tmp_path / "reports"))
    env = {**os.environ, **env, "PATH": f"{bindir}:{os.environ['PATH']}", "PYTHONPATH": REPO}
    return subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=120, check=False, env=env)


def _labels(features) -> list[str]:
    assert sorted(os.listdir(features)) == ["cudadoctor"]  # written under a dot name, then renamed into place
    lines = (features / "cudadoctor").read_text().splitlines()
    assert re.fullmatch(r"# \+expiry-time=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", lines[0])
    bad = [line for line in lines[1:] if not LABEL.match(line)]
    assert not bad
    return lines[1:]


@pytest.mark.skipif(shutil.which("sh") is None, reason="no /bin/sh")
def test_the_indexed_jobs_script_writes_the_snapshot_and_the_labels(tmp_path):
    result = _run_here(_script("cudadoctor-snapshot"), tmp_path, {"NODE_NAME": "gpu-node-7"})
    assert result.returncode == 0, result.stderr
    with open(tmp_path / "reports" / "gpu-node-7.json", encoding="utf-8") as handle:
        assert json.load(handle)["kind"] == "cudadoctor-facts"
    labels = _labels(tmp_path / "features.d")
    assert any(line.endswith(("/healthy=true", "/healthy=false")) for line in labels)


def test_the_daemonsets_script_labels_the_node_as_check_judges_it(tmp_path):
    # One round of the DaemonSet's loop on this machine: the healthy label is check's verdict here.
    result = _run_here(_script("cudadoctor"), tmp_path, {})
    assert result.returncode == 0, result.stderr
    check = subprocess.run([sys.executable, "-m", "cudadoctor", "check", "--format", "json"], capture_output=True,
                           text=True, timeout=120, check=False, env={**os.environ, "PYTHONPATH": REPO})  # fmt: skip
    healthy = "true" if check.returncode == 0 else "false"
    assert f"cudadoctor.feature.node.kubernetes.io/healthy={healthy}" in _labels(tmp_path / "features.d")
