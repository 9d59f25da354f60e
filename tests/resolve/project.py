"""A temporary envbuilder project (matrices/ + locks/) and ways to run the real CLI on it.

In-process runs (`Project.run`) call `envbuilder.cli.main` exactly as the console script does and
return the exit code and what it printed; `Project.spawn` starts the real `envbuilder` script in a
subprocess for tests that need a second process (concurrency, SIGKILL).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PINNED_IMAGE = "debian@sha256:" + "0" * 64
ENVBUILDER = Path(sys.executable).with_name("envbuilder")


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def matrix_yaml(target: str, packages: dict, python: str = "3.12", libc: str = "glibc_2.39",
                extra: str = "") -> str:
    """A minimal valid matrix, `packages:` last (one line each, from line 6) so tests can append entries."""
    return (f"schema: 1\ntarget: {target}\n"
            f"platform: {{os: linux, machine: x86_64, libc: {libc}, python: \"{python}\"}}\n"
            f"toolchain: {{base_image: \"{PINNED_IMAGE}\"}}\n"
            "packages:\n" + "".join(f"  {json.dumps(k)}: {json.dumps(v)}\n" for k, v in packages.items()) + extra)


@dataclass
class Project:
    root: Path
    capsys: pytest.CaptureFixture

    def write_matrix(self, target: str, packages: dict, **kw: str) -> Path:
        path = self.root / "matrices" / f"{target}.yaml"
        path.write_text(matrix_yaml(target, packages, **kw))
        return path

    def lock_path(self, target: str) -> Path:
        return self.root / "locks" / f"{target}.lock.toml"

    def lock_bytes(self, target: str) -> bytes:
        return self.lock_path(target).read_bytes()

    def read_lock(self, target: str):
        from envbuilder.lock import read_lock

        return read_lock(self.lock_path(target))

    def run(self, *args: str) -> Result:
        """`envbuilder ARGS` in this process; never lets an exception other than SystemExit out."""
        from envbuilder.cli import main

        self.capsys.readouterr()
        try:
            main(list(args))
            rc = 0
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = self.capsys.readouterr()
        return Result(rc, captured.out, captured.err)

    def spawn(self, *args: str, **popen: object) -> subprocess.Popen:
        """The real console script in a child process, with this test's environment."""
        return subprocess.Popen([str(ENVBUILDER), *args], cwd=self.root, env=dict(os.environ),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def wide_consoles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich wraps at 80 columns when not on a terminal; tests read whole lines."""
    import envbuilder.cli as cli
    from envbuilder.cli import lock

    for console in (cli.err_console, lock.console):
        monkeypatch.setattr(console, "width", 1000)


@pytest.fixture
def project(tmp_path: Path, default_index, monkeypatch: pytest.MonkeyPatch, capsys) -> Project:
    root = tmp_path / "project"
    (root / "matrices").mkdir(parents=True)
    (root / "locks").mkdir()
    monkeypatch.setenv("ENVBUILDER_ROOT", str(root))
    monkeypatch.setenv("ENVBUILDER_PAGE_TTL", "0")  # every online run asks the index again
    wide_consoles(monkeypatch)
    return Project(root, capsys)


def publish(server, name: str, version: str, requires: tuple[str, ...] | list[str] = (),
            tags: str = "py3-none-any", **served: object):
    """Build a real wheel and serve it; `served` goes to IndexServer.add (yanked, requires_python)."""
    from tests.support.dists import make_wheel

    return server.add(make_wheel(name, version, requires_dist=list(requires), tags=tags), **served)
