"""Host, loader and GPU-information parsers: os-release, /proc/<pid>/cgroup, dpkg's status database,
ld.so.conf and /proc/driver/nvidia/gpus/*/information."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from cudadoctor.probes.gpus import parse_gpu_information
from cudadoctor.probes.host import parse_cgroup, parse_dpkg_version, parse_os_release
from cudadoctor.probes.loader import parse_ld_so_conf, parse_ld_so_conf_entries
from tests.property.strategies import (
    any_text,
    fixture_text,
    line_free_text,
    mutated,
    numberish,
    property_settings,
)

#: Examples per parser (each property of a parser runs this many).
EXAMPLES = {
    "parse_os_release": 150,
    "parse_cgroup": 150,
    "parse_dpkg_version": 100,
    "parse_ld_so_conf_entries": 150,
    "parse_ld_so_conf": 100,
    "parse_gpu_information": 150,
}

_RUNTIMES = {"kubernetes", "podman", "docker", "containerd", "lxc"}
_OS_RELEASE = fixture_text("host", "h200-os-release")
_CGROUP = fixture_text("host", "cgroup-v1-docker")
_LD_SO_CONF = (
    fixture_text("libraries", "h200-etc", "ld.so.conf")
    + fixture_text("libraries", "h200-etc", "ld.so.conf.d", "libc.conf")
    + "hwcap 1 nosegneg\n/opt/a=libc6,/opt/b /opt/c\n"
)
_INFORMATION = fixture_text("gpus", "information-unknown-model.txt")
_DPKG = (
    "Package: libc6\nStatus: install ok installed\nVersion: 2.39-0ubuntu8.4\n\n"
    "Package: libcudnn9-cuda-13\nStatus: install ok installed\nVersion: 9.14.0.64-1\n"
)


# --- os-release -----------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_os_release"])
@given(st.one_of(any_text(), mutated(_OS_RELEASE)))
def test_parse_os_release_any_text(text: str) -> None:
    values = parse_os_release(text)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in values.items())


_OS_KEYS = st.from_regex(r"[A-Z_][A-Z0-9_]{0,15}", fullmatch=True)


def _shell_quote(value: str) -> str:
    """os-release(5): in a double-quoted value, ``\\``, ``"``, ``$`` and backtick are escaped."""
    return '"' + re.sub(r'([\\"$`])', r"\\\1", value) + '"'


@property_settings(EXAMPLES["parse_os_release"])
@given(st.dictionaries(_OS_KEYS, line_free_text(max_size=30), max_size=8))
def test_parse_os_release_round_trip(values: dict[str, str]) -> None:
    text = "# os-release\n" + "".join(f"{key}={_shell_quote(value)}\n" for key, value in values.items())
    assert parse_os_release(text) == values


# --- cgroup ---------------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_cgroup"])
@given(st.one_of(any_text(), mutated(_CGROUP)))
def test_parse_cgroup_any_text(text: str) -> None:
    for path, runtime in parse_cgroup(text):
        assert runtime in _RUNTIMES
        assert any(path in line for line in text.splitlines())


@property_settings(EXAMPLES["parse_cgroup"])
@given(
    st.lists(
        st.tuples(
            st.integers(0, 13),
            st.sampled_from(["", "memory", "cpu,cpuacct", "name=systemd"]),
            st.sampled_from(["docker", "kubepods", "libpod", "containerd", "lxc", "system.slice", "user"]),
            st.from_regex(r"[0-9a-f]{0,64}", fullmatch=True),
        ),
        max_size=6,
    )
)
def test_parse_cgroup_round_trip(lines: list[tuple[int, str, str, str]]) -> None:
    text = "".join(f"{n}:{controllers}:/{where}/{cid}\n" for n, controllers, where, cid in lines)
    names = {"docker": "docker", "kubepods": "kubernetes", "libpod": "podman", "containerd": "containerd", "lxc": "lxc"}
    expected = [(f"/{where}/{cid}", names[where]) for _, _, where, cid in lines if where in names]
    assert parse_cgroup(text) == expected


# --- dpkg status ----------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_dpkg_version"])
@given(st.one_of(any_text(), mutated(_DPKG)), st.one_of(st.sampled_from(["libc6", "libcudnn9-cuda-13"]), any_text(12)))
def test_parse_dpkg_version_any_text(text: str, package: str) -> None:
    version = parse_dpkg_version(text, package)
    assert version is None or (version and not any(c.isspace() for c in version))


_PACKAGES = st.from_regex(r"[a-z0-9][a-z0-9+.-]{1,20}", fullmatch=True)
_DEB_VERSIONS = st.from_regex(r"([0-9]:)?[0-9][A-Za-z0-9.+~]{0,10}(-[A-Za-z0-9.+~]{1,8})?", fullmatch=True)


@property_settings(EXAMPLES["parse_dpkg_version"])
@given(st.dictionaries(_PACKAGES, _DEB_VERSIONS, min_size=1, max_size=5), st.data())
def test_parse_dpkg_version_round_trip(installed: dict[str, str], data: st.DataObject) -> None:
    text = "\n".join(
        f"Package: {name}\nStatus: install ok installed\nPriority: optional\nVersion: {version}\nDepends: x\n"
        for name, version in installed.items()
    )
    name = data.draw(st.sampled_from(sorted(installed)))
    assert parse_dpkg_version(text, name) == installed[name]


# --- ld.so.conf -----------------------------------------------------------------------------------


@property_settings(EXAMPLES["parse_ld_so_conf_entries"])
@given(st.one_of(any_text(), mutated(_LD_SO_CONF)))
def test_parse_ld_so_conf_entries_any_text(text: str) -> None:
    for kind, value in parse_ld_so_conf_entries(text):
        assert kind in ("dir", "include")
        assert value and "#" not in value and not any(c.isspace() for c in value)


_DIRS = st.from_regex(r"/[A-Za-z0-9_./+-]{0,30}", fullmatch=True)


@property_settings(EXAMPLES["parse_ld_so_conf_entries"])
@given(st.lists(st.tuples(st.sampled_from(["dir", "include"]), _DIRS), max_size=8), st.booleans())
def test_parse_ld_so_conf_entries_round_trip(entries: list[tuple[str, str]], comments: bool) -> None:
    note = "  # a comment" if comments else ""
    text = "".join(f"{'include ' if kind == 'include' else ''}{value}{note}\n\n" for kind, value in entries)
    assert parse_ld_so_conf_entries(text) == entries


@property_settings(EXAMPLES["parse_ld_so_conf"])
@given(st.one_of(any_text(), mutated(_LD_SO_CONF)))
def test_parse_ld_so_conf_any_text(text: str) -> None:
    dirs, includes = parse_ld_so_conf(text)
    entries = parse_ld_so_conf_entries(text)
    assert dirs == [v for k, v in entries if k == "dir"]
    assert includes == [v for k, v in entries if k == "include"]


# --- /proc/driver/nvidia/gpus/*/information -------------------------------------------------------


@property_settings(EXAMPLES["parse_gpu_information"])
@given(st.one_of(any_text(), mutated(_INFORMATION)))
def test_parse_gpu_information_any_text(text: str) -> None:
    _check_information(text)


@property_settings(EXAMPLES["parse_gpu_information"])
@given(line_free_text(max_size=20), st.one_of(numberish(), any_text(6)))
def test_parse_gpu_information_near_valid(model: str, minor: str) -> None:
    _check_information(f"Model: \t\t {model}\nIRQ:   \t\t 41\nDevice Minor: \t {minor}\n")


def _check_information(text: str) -> None:
    info = parse_gpu_information(text)
    if info is not None:
        assert info.model and info.model.isprintable()
        assert "GPU-" not in (info.bus_location or "")  # the UUID line is never kept
        assert info.device_minor is None or (isinstance(info.device_minor, int) and info.device_minor >= 0)


_MODELS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ._()-]{0,30}[A-Za-z0-9)]", fullmatch=True)


@property_settings(EXAMPLES["parse_gpu_information"])
@given(_MODELS, st.from_regex(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", fullmatch=True), st.integers(0, 255))
def test_parse_gpu_information_round_trip(model: str, bus: str, minor: int) -> None:
    text = (
        f"Model: \t\t {model}\nIRQ:   \t\t 41\nGPU UUID: \t GPU-00000000-0000-0000-0000-000000000000\n"
        f"Bus Location: \t {bus}\nDevice Minor: \t {minor}\nGPU Excluded:\t No\n"
    )
    info = parse_gpu_information(text)
    assert info is not None
    assert (info.model, info.bus_location, info.device_minor) == (model, bus, minor)
