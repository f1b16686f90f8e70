from __future__ import annotations

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
