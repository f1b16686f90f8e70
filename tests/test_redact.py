from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cudadoctor.redact import MASK, Redactor, is_secret_name


def test_secret_names():
    for name in ("HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "WANDB_API_KEY", "DB_PASSWORD", "GITHUB_PAT", "KEY"):
        assert is_secret_name(name), name
    for name in ("CUDA_VERSION", "NCCL_VERSION", "LD_LIBRARY_PATH", "KEYBOARD", "MONKEY_BUSINESS"):
        assert not is_secret_name(name), name


def test_document_masks_env_values_uuids_urls_and_home():
    r = Redactor(["/home/alice"])
    doc = {
        "env": [
            {"name": "HF_TOKEN", "value": "hf_abcdef", "claims": None},
            {"name": "PIP_INDEX_URL", "value": "https://bob:s3cret@mirror.example/simple", "claims": None},
            {"name": "CUDA_HOME", "value": "/home/alice/cuda", "claims": None},
        ],
        "note": "GPU-538b6ea1-1256-a40e-945c-0ea72f4ef587 at /home/alice",
        "other": "/home/alicex/keep",
    }
    out = r.document(doc)
    assert out["env"][0]["value"] == MASK
    assert out["env"][1]["value"] == f"https://{MASK}@mirror.example/simple"
    assert out["env"][2]["value"] == "~/cuda"
    assert out["note"] == "GPU-<redacted> at ~"
    assert out["other"] == "/home/alicex/keep"
    assert "s3cret" not in repr(out) and "hf_abcdef" not in repr(out)


_TEXTS = st.sampled_from(
    [
        "plain",
        "****",
        "/home/alice/venv/lib",
        "/home/alice.old/x",
        "GPU-12345678-1234-1234-1234-123456789abc",
        "https://user:hunter22@mirror/simple",
        "HF_TOKEN=abcdefgh123 rest",
        "abcdefgh123",
        "HF_TOKEN",
        "a==b",
        "",
    ]
)
_KEYS = st.sampled_from(["name", "value", "path", "HF_TOKEN", "api_key", "env", "stderr"])
_DOCS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), _TEXTS),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=20,
)


@given(_DOCS, st.booleans())
@example({"name": "HF_TOKEN", "value": "plain"}, False)
@example({"name": "HF_TOKEN", "value": MASK, "path": "/home/alice/x"}, True)
@example({"api_key": "plain"}, False)
@example(["x", {"env": "HF_TOKEN=abcdefgh123 rest"}], False)
@settings(max_examples=300)
def test_changes_says_exactly_whether_document_would_change_anything(doc, with_home) -> None:
    """``changes`` is the allocation-free twin of ``document`` that every run asks first."""
    redactor = Redactor(["/home/alice"] if with_home else [])
    assert redactor.changes(doc) == (redactor.document(doc) != doc)
