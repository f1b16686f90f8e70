"""The redaction rules that the end-to-end secret tests rely on, one case each."""

from __future__ import annotations

import os

import pytest

from cudadoctor.pipconfig import redacted
from cudadoctor.redact import MASK, Redactor

HOME = "/home/alice"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://bob:pw@mirror/simple", "https://****@mirror/simple"),
        ("https://bob:p@ss@mirror/simple", "https://****@mirror/simple"),  # unencoded @
        ("https://bob:to/ken+x=@mirror/simple", "https://****@mirror/simple"),  # unencoded / (base64)
        ("https://bob:pa#ss@mirror/simple", "https://****@mirror/simple"),
        ("https://tok3n@mirror/simple", "https://****@mirror/simple"),
        ("/usr/lib:https://bob:pw@libs/lib:/opt/lib", "/usr/lib:https://****@libs/lib:/opt/lib"),
        ("git+https://github.com/org/repo@v1.0", "git+https://github.com/org/repo@v1.0"),  # a ref, not a user
        ("https://mirror:8443/simple", "https://mirror:8443/simple"),
        ("failed: HF_TOKEN=hf_abc123 (exit 1)", "failed: HF_TOKEN=**** (exit 1)"),
        ("export AWS_SECRET_ACCESS_KEY=wJa/K7+b=; next", "export AWS_SECRET_ACCESS_KEY=****; next"),
        ("GET /simple?token=abc&page=2", "GET /simple?token=****&page=2"),
        ("CUDA_VISIBLE_DEVICES=0,1 platform_machine=='x86_64'", "CUDA_VISIBLE_DEVICES=0,1 platform_machine=='x86_64'"),
        ("at /home/alice/venv and (/home/alice)", "at ~/venv and (~)"),
        ("root:/home/alice/img:/home/alice", "root:~/img:~"),
        ("/data/home/alice/x /home/alice.old /home/alicex", "/data/home/alice/x /home/alice.old /home/alicex"),
        ("GPU-538b6ea1-1256-a40e-945c-0ea72f4ef587", "GPU-<redacted>"),
    ],
)
def test_text(text: str, expected: str) -> None:
    assert Redactor([HOME]).text(text) == expected


def test_a_secret_found_once_is_masked_wherever_it_reappears() -> None:
    """LD_LIBRARY_PATH is split at ':' into the loader's directories: the URL's pieces lose their shape."""
    doc = {
        "env": [{"name": "LD_LIBRARY_PATH", "value": "/lib:https://bob:s3cretpw@libs/lib"}],
        "loader_paths": ["/lib", "https", "//bob", "s3cretpw@libs/lib"],
        "errors": ["NCCL said: s3cretpw", "token hf_plantedtoken rejected", "1 true"],
        "vars": [{"name": "HF_TOKEN", "value": "hf_plantedtoken"}, {"name": "NCCL_AUTH", "value": "1"}],
    }
    out = Redactor(()).document(doc)
    assert out["loader_paths"][3] == f"{MASK}@libs/lib"
    assert out["errors"] == [f"NCCL said: {MASK}", f"token {MASK} rejected", "1 true"]  # short values: in place only
    assert out["vars"] == [{"name": "HF_TOKEN", "value": MASK}, {"name": "NCCL_AUTH", "value": MASK}]


def test_without_homes_only_paths_stay() -> None:
    out = Redactor(()).text(f"{HOME}/x https://bob:pw@h/ HF_TOKEN=hf_x GPU-538b6ea1-1256-a40e-945c-0ea72f4ef587")
    assert out == f"{HOME}/x https://****@h/ HF_TOKEN=**** GPU-<redacted>"


def test_the_home_directory_is_masked_in_both_spellings(tmp_path, monkeypatch) -> None:
    real = tmp_path / "nfs" / "alice"
    real.mkdir(parents=True)
    link = tmp_path / "home-alice"
    link.symlink_to(real)
    monkeypatch.setenv("HOME", str(link))
    redactor = Redactor.for_this_user()
    assert redactor.text(f"{link}/a {real}/b") == "~/a ~/b"
    assert os.path.realpath(link) == str(real)


@pytest.mark.parametrize(
    "url",
    [
        "http://alice:pa/ss@127.0.0.1:8/simple/",
        "http://alice:pa#ss@127.0.0.1/simple/",
        "http://alice:pa?ss@127.0.0.1/simple/",
        "https://__token__:pypi-Ag/x+y=@host/simple/",
        "https://alice:p@ss@host/simple/",
    ],
)
def test_index_urls_that_urlsplit_misreads_are_still_masked(url: str) -> None:
    shown = redacted(url)
    assert "ss" not in shown.replace("simple", "") and "Ag" not in shown and "alice" not in shown
    assert shown.startswith(("http://****@", "https://****@")) and redacted(shown) == shown
