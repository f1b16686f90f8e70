"""cudadoctor.pipconfig: the index pip would use, in pip's order, on a fake file system (pyfakefs)."""

from __future__ import annotations

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem

from cudadoctor.pipconfig import PYPI_SIMPLE, IndexConfig, config_files, configured_index, redacted

HOME = "/home/u"
ENV = {"HOME": HOME}


def conf(url: str, section: str = "global", key: str = "index-url") -> str:
    return f"[{section}]\n{key} = {url}\n"


def test_default_is_pypi(fs: FakeFilesystem) -> None:
    assert configured_index(ENV) == IndexConfig(PYPI_SIMPLE, "default")


def test_explicit_beats_environment_and_files(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/pip.conf", contents=conf("https://files.example/simple/"))
    env = {**ENV, "PIP_INDEX_URL": "https://env.example/simple/"}
    assert configured_index(env, explicit=" https://cli.example/simple/ ") == IndexConfig(
        "https://cli.example/simple/", "--index-url"
    )
    assert configured_index(env) == IndexConfig("https://env.example/simple/", "PIP_INDEX_URL")
    assert configured_index({**env, "PIP_INDEX_URL": ""}).source == "/etc/pip.conf [global] index-url"


# Files from lowest to highest priority (pip: global < user < site < PIP_CONFIG_FILE; later files of a kind win).
LAYERS = [
    ("/etc/xdg/pip/pip.conf", "xdg-global"),
    ("/etc/pip.conf", "etc"),
    (f"{HOME}/.pip/pip.conf", "legacy-user"),
    (f"{HOME}/.config/pip/pip.conf", "user"),
    ("/venv/pip.conf", "site"),
    ("/cfg/pip.conf", "env-file"),
]


@pytest.mark.parametrize("top", range(len(LAYERS)), ids=[name for _, name in LAYERS])
def test_pips_file_order(fs: FakeFilesystem, top: int) -> None:
    """With layers 0..top present, the highest one wins."""
    for path, name in LAYERS[: top + 1]:
        fs.create_file(path, contents=conf(f"https://{name}.example/simple/"))
    env = {**ENV, "VIRTUAL_ENV": "/venv", "PIP_CONFIG_FILE": "/cfg/pip.conf"}
    path, name = LAYERS[top]
    if name != "env-file":
        env["PIP_CONFIG_FILE"] = "/cfg/missing.conf"  # named but absent: user files still count
    result = configured_index(env)
    assert result == IndexConfig(f"https://{name}.example/simple/", f"{path} [global] index-url")


def test_install_section_beats_global_from_any_file(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/pip.conf", contents=conf("https://install.example/simple/", "install"))
    fs.create_file(f"{HOME}/.config/pip/pip.conf", contents=conf("https://global.example/simple/"))
    result = configured_index(ENV)
    assert result == IndexConfig("https://install.example/simple/", "/etc/pip.conf [install] index-url")


def test_existing_pip_config_file_turns_user_files_off(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/pip.conf", contents=conf("https://etc.example/simple/"))
    fs.create_file(f"{HOME}/.config/pip/pip.conf", contents=conf("https://user.example/simple/"))
    fs.create_file("/cfg/pip.conf", contents="[global]\ntimeout = 60\n")
    assert configured_index({**ENV, "PIP_CONFIG_FILE": "/cfg/pip.conf"}).url == "https://etc.example/simple/"
    assert configured_index(ENV).url == "https://user.example/simple/"


def test_pip_config_file_devnull_turns_all_files_off(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/pip.conf", contents=conf("https://etc.example/simple/"))
    assert configured_index({**ENV, "PIP_CONFIG_FILE": "/dev/null"}).source == "default"
    assert config_files({**ENV, "PIP_CONFIG_FILE": "/dev/null"}) == []


def test_xdg_directories(fs: FakeFilesystem) -> None:
    env = {**ENV, "XDG_CONFIG_DIRS": "/a:/b", "XDG_CONFIG_HOME": "/xdg-home"}
    assert config_files(env) == [
        ("global", "/a/pip/pip.conf"),
        ("global", "/b/pip/pip.conf"),
        ("global", "/etc/pip.conf"),
        ("user", f"{HOME}/.pip/pip.conf"),
        ("user", "/xdg-home/pip/pip.conf"),
    ]
    fs.create_file("/xdg-home/pip/pip.conf", contents=conf("https://xdg.example/simple/"))
    assert configured_index(env).url == "https://xdg.example/simple/"


def test_prefix_replaces_virtual_env(fs: FakeFilesystem) -> None:
    fs.create_file("/target/pip.conf", contents=conf("https://target.example/simple/"))
    fs.create_file("/venv/pip.conf", contents=conf("https://venv.example/simple/"))
    env = {**ENV, "VIRTUAL_ENV": "/venv"}
    assert configured_index(env).url == "https://venv.example/simple/"
    assert configured_index(env, prefix="/target").url == "https://target.example/simple/"


@pytest.mark.parametrize("key", ["index-url", "index_url", "--index-url", "Index-URL"])
def test_key_spellings_pip_accepts(fs: FakeFilesystem, key: str) -> None:
    fs.create_file("/etc/pip.conf", contents=conf("https://k.example/simple/", key=key))
    assert configured_index(ENV).url == "https://k.example/simple/"


def test_empty_value_falls_through(fs: FakeFilesystem) -> None:
    fs.create_file("/etc/pip.conf", contents=conf("https://etc.example/simple/"))
    fs.create_file(f"{HOME}/.config/pip/pip.conf", contents="[global]\nindex-url =\n")
    assert configured_index(ENV).url == "https://etc.example/simple/"


def test_percent_in_password_is_not_interpolated(fs: FakeFilesystem) -> None:
    url = "https://bob:p%40ss%25word@mirror.example/simple/"
    fs.create_file("/etc/pip.conf", contents=conf(url))
    result = configured_index(ENV)
    assert result.url == url
    assert "p%40ss" not in repr(result) and "bob" not in result.display


@pytest.mark.parametrize(
    ("contents", "problem"),
    [
        (b"index-url = https://nosection.example/\n", "not a valid config file (line 1): MissingSectionHeaderError"),
        (b"[global\nindex-url = x\n", "not a valid config file"),
        (b"[global]\n  continuation without key\n", "not a valid config file"),
        (b"[global]\nindex-url = https://\xff\xfe.example/\n", "not UTF-8 text"),
        (b"#" * (2 << 20), "larger than 1 MiB"),
    ],
    ids=["no-section", "bad-header", "bad-continuation", "not-utf8", "huge"],
)
def test_bad_file_is_skipped_with_a_reason(fs: FakeFilesystem, contents: bytes, problem: str) -> None:
    fs.create_file("/etc/pip.conf", contents=contents)
    fs.create_file(f"{HOME}/.pip/pip.conf", contents=conf("https://fallback.example/simple/"))
    result = configured_index(ENV)
    assert result.url == "https://fallback.example/simple/"
    assert len(result.problems) == 1 and result.problems[0].startswith("/etc/pip.conf: ")
    assert problem in result.problems[0]


def test_directory_in_place_of_a_file(fs: FakeFilesystem) -> None:
    fs.create_dir("/etc/pip.conf")
    result = configured_index(ENV)
    assert result.source == "default"
    assert result.problems == ("/etc/pip.conf: is a directory; skipped",)


def test_duplicate_keys_do_not_crash(fs: FakeFilesystem) -> None:
    text = "[global]\nindex-url = https://one.example/\n[global]\nindex-url = https://two.example/\n"
    fs.create_file("/etc/pip.conf", contents=text)
    result = configured_index(ENV)
    assert result.url == "https://two.example/" and result.problems == ()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://pypi.org/simple/", "https://pypi.org/simple/"),
        ("https://user:tok@mirror.example/simple/", "https://****@mirror.example/simple/"),
        ("https://tokenonly@mirror.example:8443/simple/", "https://****@mirror.example:8443/simple/"),
        ("https://h.example/simple/?token=abc&x=1", "https://h.example/simple/?token=****&x=1"),
        ("https://h.example/f.whl?X-Amz-Signature=abc", "https://h.example/f.whl?X-Amz-Signature=****"),
        ("not a url user:pw@x", "not a url user:pw@x"),
        ("see https://a:b@h.example/ and more", "see https://****@h.example/ and more"),
    ],
    ids=["plain", "user-password", "token", "query-token", "signed-url", "not-a-url", "in-text"],
)
def test_redacted(url: str, shown: str) -> None:
    assert redacted(url) == shown
    assert redacted(redacted(url)) == shown


def test_repr_never_shows_credentials() -> None:
    config = IndexConfig("https://alice:s3cret@mirror.example/simple/", "PIP_INDEX_URL")
    assert "s3cret" not in repr(config) and "alice" not in repr(config)
    assert config.display == "https://****@mirror.example/simple/"
