"""``rootfs.match_names`` (the probes' glob without regular expressions) answers exactly as ``fnmatch.filter``."""

from __future__ import annotations

import fnmatch

from hypothesis import given
from hypothesis import strategies as st

from cudadoctor.rootfs import match_names
from tests.property.strategies import property_settings

#: Letters that make collisions likely, the probes' own separators, and the metacharacters fnmatch knows.
_NAME = st.text(alphabet="ab.so1*", max_size=12)
_PATTERN = st.text(alphabet="ab.so1*?[]!\\", max_size=8)
_REAL = [
    ("libcudnn*.so.*", ["libcudnn.so.9", "libcudnn_ops.so.9.1.0", "libcudnn.so", "libcublas.so.12", "xlibcudnn.so.9"]),
    ("*.so*", ["a.so", "b.so.1", "c.py", ".so", "so"]),
    ("libnccl.so.2", ["libnccl.so.2", "libnccl.so.2.21.5", "libnccl.so"]),
    ("lib*cuda*.so.*", ["libcuda.so.1", "libnvcuda.so.1", "libcudart.so.12", "libcuda.so"]),
]


@given(names=st.lists(_NAME, max_size=8), pattern=_PATTERN)
@property_settings(400)
def test_match_names_is_fnmatch_filter(names: list[str], pattern: str) -> None:
    assert match_names(names, pattern) == fnmatch.filter(names, pattern)


def test_match_names_on_the_probes_patterns() -> None:
    for pattern, names in _REAL:
        assert match_names(names, pattern) == fnmatch.filter(names, pattern), pattern
    names = ["libcudnn.so.9", "libcudnn_ops.so.9"]
    assert match_names(names, "libcudnn*.so.*") == names
    assert match_names(["aXa", "a"], "a*a") == ["aXa"]  # the two ends never overlap
