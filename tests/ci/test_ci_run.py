"""CI runs every test it claims to: the README's command is .ci/run's, tests/build is collected,
the junit check catches a folder that was not run, and absent tools fail under ENVBUILDER_CI=1."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from tests.conftest import require_tool

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / ".ci" / "check_junit.py"


def ci_pytest_command() -> str:
    [line] = [l.strip() for l in (REPO / ".ci" / "run").read_text().splitlines()
              if l.strip().startswith(".venv/bin/python -m pytest")]
    return line.split(" || ")[0]


def test_readme_gives_the_test_command_ci_runs() -> None:
    command = ci_pytest_command()
    assert "--junitxml=" in command and '-m "not gpu"' in command
    assert f"ENVBUILDER_CI=1 {command}" in (REPO / "README.md").read_text()
    assert "export ENVBUILDER_CI=1" in (REPO / ".ci" / "run").read_text()


def test_folders_named_build_are_collected() -> None:
    ini = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "build" not in ini["norecursedirs"]
    assert ini["testpaths"] == ["tests"]


def _collected(folder: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-m", "not gpu", folder], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:]
    return [l for l in done.stdout.splitlines() if "::" in l]


def _junit(path: Path, cases: dict[str, str]) -> Path:
    """A junit report as pytest writes it: node id tests/x/test_y.py::name -> classname tests.x.test_y."""
    rows = []
    for node, outcome in cases.items():
        module, _, name = node.partition("::")
        classname = module.removesuffix(".py").replace("/", ".")
        if "::" in name:
            klass, _, name = name.rpartition("::")
            classname += "." + klass.replace("::", ".")
        body = {"passed": "", "failed": "<failure message='x'/>", "skipped": "<skipped message='no tool'/>"}[outcome]
        rows.append(f"<testcase classname={quoteattr(classname)} name={quoteattr(name)} time='0'>{body}</testcase>")
    path.write_text(f"<?xml version='1.0'?><testsuites><testsuite name='pytest'>{''.join(rows)}"
                    "</testsuite></testsuites>")
    return path


def _check(report: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), str(report), "tests/build", "-m", "not gpu", *args],
                          capture_output=True, text=True, cwd=REPO)


@pytest.fixture(scope="module")
def build_ids() -> list[str]:
    ids = _collected("tests/build")
    assert any("test_docker_e2e.py::" in i for i in ids) and len(ids) >= 40
    return ids


def test_junit_check_passes_a_complete_report(build_ids: list[str], tmp_path: Path) -> None:
    done = _check(_junit(tmp_path / "j.xml", dict.fromkeys(build_ids, "passed")))
    assert done.returncode == 0, done.stderr
    assert f"{len(build_ids)} tests defined, {len(build_ids)} ran, 0 skipped, 0 absent" in done.stdout


def test_junit_check_fails_when_a_build_test_is_absent_or_skipped(build_ids: list[str], tmp_path: Path) -> None:
    cases = dict.fromkeys(build_ids[1:], "passed")
    cases[build_ids[1]] = "skipped"
    done = _check(_junit(tmp_path / "j.xml", cases))
    assert done.returncode == 1
    assert f"absent:  {build_ids[0]}" in done.stderr and f"skipped: {build_ids[1]}" in done.stderr
    allowed = _check(tmp_path / "j.xml", "--allow-skips")
    assert allowed.returncode == 1  # absent still fails
    assert f"skipped: {build_ids[1]}" not in allowed.stderr
    assert "1 skipped (allowed), 1 absent" in allowed.stdout  # the count is still the truth


def test_junit_check_fails_an_empty_or_unreadable_report(tmp_path: Path) -> None:
    assert _check(_junit(tmp_path / "empty.xml", {})).returncode == 1
    (tmp_path / "bad.xml").write_text("<testsuites")
    done = _check(tmp_path / "bad.xml")
    assert done.returncode == 1 and "cannot read the test report" in done.stderr and "Traceback" not in done.stderr


def test_absent_tool_skips_locally_and_fails_under_envbuilder_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    require_tool("present", "/usr/bin/x", "nothing to do")  # available: no outcome
    monkeypatch.delenv("ENVBUILDER_CI", raising=False)
    monkeypatch.setenv("CI", "true")  # the generic variable is not ours
    with pytest.raises(pytest.skip.Exception, match="nvcc is not available: put it on PATH"):
        require_tool("nvcc", None, "put it on PATH")
    monkeypatch.setenv("ENVBUILDER_CI", "1")
    with pytest.raises(pytest.fail.Exception, match="ENVBUILDER_CI=1 and nvcc is not available"):
        require_tool("nvcc", None, "put it on PATH")


def test_no_test_reads_the_generic_ci_variable() -> None:
    pattern = re.compile(r"""environ(?:\.get)?\(\s*["']CI["']|environ\[\s*["']CI["']|getenv\(\s*["']CI["']""")
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_long_ci_steps_print_an_estimate_a_heartbeat_and_the_measured_time(tmp_path: Path) -> None:
    # The step ends once two heartbeats are out (no sleep-length race on a loaded machine).
    out = tmp_path / "out.txt"
    script = (f'exec >{out}; source .ci/lib.sh; '
              f'step() {{ export STEP_RAN=yes; until [ "$(grep -c "still running" {out})" -ge 2 ]; do sleep 0.1; done; }}; '
              'CI_HEARTBEAT_S=1 ci_long "[t] compile" 480 step; echo "rc=$? ran=$STEP_RAN"; '
              'ci_long "[t] broken" 5 false; echo "rc=$?"')
    subprocess.run(["bash", "-c", script], cwd=REPO, timeout=120, check=True)
    lines = [line for line in out.read_text().splitlines() if line]
    assert lines[0] == "[ci] [t] compile: started (estimate ~8m00s cold on 2 cores; less when cached)"
    assert re.fullmatch(r"\[ci\] \[t\] compile: still running, \d+s elapsed of ~8m00s estimated", lines[1])
    assert re.fullmatch(r"\[ci\] \[t\] compile: done in \d+s", lines[lines.index("rc=0 ran=yes") - 1])
    assert re.fullmatch(r"\[ci\] \[t\] broken: FAILED \(exit 1\) in \d+s", lines[-2]) and lines[-1] == "rc=1"


# Skips that are not about an absent tool, each with why; every other skip goes through require_tool.
NOT_TOOL_SKIPS = {
    "tests/doctor/test_doctor_replay.py": "the CPU-host test cannot run on a host with an NVIDIA driver",
    "tests/export/test_shipped.py": "a shipped target whose lock is not committed yet",
    "tests/export/test_roundtrip.py": "a shipped target whose lock is not committed yet",
    "tests/abi/test_inspect_network.py": "the one opt-in exception, ENVBUILDER_LARGE_DOWNLOADS (README)",
    "tests/ci/test_ci_run.py": "asserts the skip itself",
    "tests/reality/test_abi_reality.py": "outside CI the same ENVBUILDER_LARGE_DOWNLOADS opt-in (CI always runs the "
                                         "subset); the full table is on demand (ENVBUILDER_REALITY_FULL)",
}


def test_tool_skips_go_through_require_tool() -> None:
    pattern = re.compile(r"pytest\.skip\(|\.skipif\(|importorskip\(")
    offenders = [str(p.relative_to(REPO)) for p in (REPO / "tests").rglob("*.py")
                 if p.name != "conftest.py" or p.parent != REPO / "tests"
                 if pattern.search(p.read_text()) and str(p.relative_to(REPO)) not in NOT_TOOL_SKIPS]
    assert offenders == [], "use tests.conftest.require_tool / needs_tool (fails under ENVBUILDER_CI=1)"
