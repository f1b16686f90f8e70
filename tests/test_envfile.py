from __future__ import annotations

import pytest

from cudadoctor.envfile import parse_env_file, read_env_file
from cudadoctor.errors import UsageError


def test_docker_env_file_format():
    env, warnings = parse_env_file(
        "# image env\nCUDA_VERSION=13.0.2\n\nNVIDIA_REQUIRE_CUDA=cuda>=13.0 brand=tesla,driver>=535\nEMPTY=\nHOSTONLY\n"
    )
    assert env == {"CUDA_VERSION": "13.0.2", "NVIDIA_REQUIRE_CUDA": "cuda>=13.0 brand=tesla,driver>=535", "EMPTY": ""}
    assert warnings == ["env file line 6: a name without '=VALUE'; ignored (host values are not used)"]


def test_values_are_literal():
    env, _ = parse_env_file('PATH="/a:/b"\nX=a=b\n')
    assert env == {"PATH": '"/a:/b"', "X": "a=b"}


def test_bad_name_is_a_usage_error():
    with pytest.raises(UsageError, match="line 1"):
        parse_env_file("not a name=1\n")


def test_missing_file(tmp_path):
    with pytest.raises(UsageError, match="cannot read env file"):
        read_env_file(str(tmp_path / "missing.env"))
