from __future__ import annotations

import pytest

from cudadoctor.rules.archs import covers, parse_target

TORCH_211_CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]  # torch.cuda.get_arch_list() on the H200


@pytest.mark.parametrize(
    ("targets", "cc", "expected"),
    [
        (TORCH_211_CU130, "9.0", "sm_90"),
        (TORCH_211_CU130, "8.9", "sm_86"),  # same major, newer minor: sm_86 cubin runs on 8.9
        (TORCH_211_CU130, "6.1", None),  # Pascal: no cubin, no PTX
        (TORCH_211_CU130, "12.1", "sm_120"),
        (TORCH_211_CU130, "10.3", "sm_100"),
        (["sm_80", "compute_80"], "9.0", "compute_80"),  # PTX JIT forward
        (["sm_90a"], "9.0", "sm_90a"),
        (["sm_90a"], "9.1", None),  # arch-specific: exactly 9.0
        (["compute_90a"], "10.0", None),
        (["sm_100f"], "10.3", None),  # no family data: only itself
        (["garbage", "sm_x"], "9.0", None),
        ([], "9.0", None),
    ],
)
def test_covers(targets, cc, expected):
    assert covers(targets, cc) == expected


def test_family_specific_uses_the_family_table():
    assert covers(["sm_100f"], "10.3", {"10.0": ["10.0", "10.3"]}) == "sm_100f"
    assert covers(["sm_100f"], "12.0", {"10.0": ["10.0", "10.3"]}) is None


def test_parse_target():
    assert parse_target("sm_120") == ("sm", 12, 0, "")
    assert parse_target("compute_90a") == ("compute", 9, 0, "a")
    assert parse_target("sm90") is None
