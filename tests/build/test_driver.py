"""Driver choice: a CLI that cannot run BuildKit is passed over; none at all is exit 3."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envbuilder.build import driver
from envbuilder.errors import BadInput, Unreachable
from tests.conftest import require_tool

NEW_CLI_WITHOUT_BUILDX = """#!/bin/sh
# A docker CLI >= 23 without the buildx plugin (like /usr/local/bin/docker 28.2 on the dev machine).
case "$1" in
  version) echo "28.2.2" ;;
  buildx) echo "docker: 'buildx' is not a docker command." >&2; exit 1 ;;
  *) echo "ERROR: BuildKit is enabled but the buildx component is missing or broken." >&2; exit 1 ;;
esac
"""


@pytest.fixture
def new_cli(tmp_path: Path) -> Path:
    path = tmp_path / "bin" / "docker"
    path.parent.mkdir()
    path.write_text(NEW_CLI_WITHOUT_BUILDX)
    path.chmod(0o755)
    return path


def test_cli_without_buildkit_is_refused_with_exit_3_message(new_cli: Path) -> None:
    assert driver.kinds_of(str(new_cli)) == []
    with pytest.raises(Unreachable, match="buildx plugin.*older than 23.0"):
        driver.detect(cli=str(new_cli))


def test_forcing_a_kind_the_cli_lacks_is_unreachable(new_cli: Path) -> None:
    with pytest.raises(Unreachable, match="the 'buildx' driver"):
        driver.detect(kind="buildx", cli=str(new_cli))


def test_unknown_kind_and_missing_cli_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(BadInput):
        driver.detect(kind="kaniko")
    with pytest.raises(BadInput, match="no such executable"):
        driver.detect(cli=str(tmp_path / "nope"))


def test_every_docker_on_path_is_probed(new_cli: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Path("/usr/bin/docker")
    require_tool("a docker CLI with built-in BuildKit at /usr/bin/docker",
                 real.exists() and "docker" in driver.kinds_of(str(real)), ".ci/parts/10-docker.sh installs docker.io")
    monkeypatch.delenv("ENVBUILDER_DOCKER", raising=False)
    monkeypatch.setenv("PATH", f"{new_cli.parent}{os.pathsep}/usr/bin")
    chosen = driver.detect()
    assert chosen == driver.Driver("docker", "/usr/bin/docker")
    assert chosen.argv(driver.BuildRequest(Path("/ctx"), tags=("t:1",), network="host"))[:2] == ["/usr/bin/docker", "build"]


def test_build_cli_exits_3_when_no_cli_can_build(new_cli: Path, monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "envbuilder", "build", "cpu-llamacpp", "--docker", str(new_cli)],
                            capture_output=True, text=True, env={**os.environ, "ENVBUILDER_ROOT": str(project)})
    assert result.returncode == 3, result.stderr
    assert "can run a BuildKit build" in result.stderr and "Traceback" not in result.stderr


def test_request_flags_carry_secrets_args_and_network() -> None:
    request = driver.BuildRequest(Path("/ctx"), tags=("a:1",), stage="python", build_args=(("INDEX_URL", "u"),),
                                  secrets=("id=cacert,src=/ca.pem",), network="host", no_cache=True)
    flags = request.flags()
    assert flags[:3] == ["--progress=plain", "-f", "/ctx/Dockerfile"] and flags[-1] == "/ctx"
    for pair in (["--target", "python"], ["--build-arg", "INDEX_URL=u"], ["--secret", "id=cacert,src=/ca.pem"],
                 ["--network", "host"]):
        assert any(flags[i:i + 2] == pair for i in range(len(flags)))
    assert "--no-cache" in flags
    assert driver.Driver("buildx", "/x/docker").argv(request)[:4] == ["/x/docker", "buildx", "build", "--load"]
