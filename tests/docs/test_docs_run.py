"""Every `$ envbuilder ...` line of README.md and docs/*.md runs, from a fresh copy, and prints what is shown.

Blocks that cannot run on this machine say why in a `doc-test` comment; outputs recorded on the
H200 are checked by replaying the committed fixture through today's code.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.docs.runner import DOCS, ROOT, Block, blocks, environment, expected_rc, fresh_copy, matches, run_block

VENV_BIN = Path(sys.executable).parent


def _replay_inspect(block: Block, fixture: str) -> list[list[str]]:
    from envbuilder.abi.report import BinaryReport
    from envbuilder.cli.inspect import _print_binary
    from envbuilder.console import make_console

    out = []
    for entry in json.loads((ROOT / fixture).read_text()):
        console = make_console(record=True, file=open(os.devnull, "w"))
        _print_binary(console, BinaryReport.model_validate(entry["report"]))
        out.append((console.export_text().splitlines(), 0))
    return out


def _check(block: Block, outputs: list[tuple[list[str], int]], failures: list[str]) -> None:
    for command, (actual, rc) in zip(block.commands, outputs):
        expected, want_rc = expected_rc(command.expected)
        if (expected and not matches(expected, actual)) or (want_rc is not None and rc != want_rc):
            failures.append(f"{block.doc}:{command.line}: $ {command.text}\n--- shown\n" + "\n".join(command.expected)
                            + f"\n--- printed (exit {rc})\n" + "\n".join(actual))
    if len(outputs) < len(block.commands):
        failures.append(f"{block.where}: the session stopped after {len(outputs)} of {len(block.commands)} commands")


@pytest.fixture(scope="session")
def warm_cache(tmp_path_factory):
    """`lock --check` and the `--offline` lines read the index cache: fill it once, as a user's first
    online `envbuilder lock` would (the index pages expire; this is the one step that needs the index)."""
    import subprocess

    env = {**environment(VENV_BIN), "ENVBUILDER_CACHE_DIR": str(tmp_path_factory.mktemp("cache"))}
    copy = fresh_copy(tmp_path_factory.mktemp("warm") / "project")
    done = subprocess.run(["envbuilder", "lock", "--check", "--online"], cwd=copy, capture_output=True, text=True,
                          env=env, timeout=900)
    assert done.returncode == 0, f"could not fill the index cache (is the index reachable?):\n{done.stderr}"
    return env


@pytest.mark.network
@pytest.mark.parametrize("doc", [d for d in DOCS if blocks(d)])
def test_doc_runs_as_written(doc, tmp_path, warm_cache):
    copy = fresh_copy(tmp_path / "project")
    env = warm_cache
    failures: list[str] = []
    for block in blocks(doc):
        kind, argument = block.directive or ("run", "")
        if kind == "skip":
            assert argument, f"{block.where}: a skipped block must say why"
            continue
        if kind == "replay" and argument.startswith("doctor "):
            continue  # the H200's doctor: test_doctor_tables_recorded_on_the_h200_replay
        if kind == "replay" and argument.startswith("inspect "):
            _check(block, _replay_inspect(block, argument.split(None, 1)[1]), failures)
            continue
        _check(block, run_block(block, copy, env), failures)
    assert not failures, "\n\n".join(failures)


def test_every_envbuilder_line_is_run_or_says_why():
    """A block with an `envbuilder` command is run, replayed, or skipped with a reason; nothing else."""
    for doc in DOCS:
        for block in blocks(doc):
            if any("envbuilder " in c.text for c in block.commands) and block.directive:
                kind, argument = block.directive
                assert kind in ("skip", "replay") and argument, f"{block.where}: {block.directive}"


def _table_after(lines: list[str], start: int) -> list[list[str]]:
    """The rows of the first Markdown table at or after line index `start` (header and rule dropped)."""
    i = start
    while i < len(lines) and not lines[i].startswith("|"):
        i += 1
    rows = []
    while i < len(lines) and lines[i].startswith("|"):
        rows.append([c.strip().strip("`") for c in lines[i].strip().strip("|").split(" | ")])
        i += 1
    return rows[2:]


DOCTOR_DIRECTIVE = "<!-- doc-test: replay doctor "


@pytest.mark.parametrize("doc", [d for d in DOCS if DOCTOR_DIRECTIVE in (ROOT / d).read_text()])
def test_doctor_tables_recorded_on_the_h200_replay(doc, tmp_path):
    """Each doctor table shown for the H200 is what today's doctor says on that host, rebuilt from its
    recorded inputs (tests/fixtures/h200); the container rows (no engine there) against the recorded run."""
    from envbuilder.doctor import run_doctor
    from tests.docs.runner import mask
    from tests.doctor.test_doctor_replay import H200, recorded_host

    lines = (ROOT / doc).read_text().splitlines()
    failures = []
    for n, line in enumerate(lines):
        if not line.startswith(DOCTOR_DIRECTIVE):
            continue
        target = line[len(DOCTOR_DIRECTIVE):].split()[0]
        report = run_doctor(target, sources=recorded_host(tmp_path / f"{n}"))
        replayed = {c.id: [c.status, c.id, c.found, c.needed, c.fix] for c in report.checks}
        recorded = {c["id"]: [c["status"], c["id"], c["found"], c["needed"], c["fix"]]
                    for c in json.loads((H200 / f"doctor-{target}.json").read_text())["checks"]}
        rows = _table_after(lines, n + 1)
        assert rows, f"{doc}:{n + 1}: no table after the directive"
        for row in rows:
            want = replayed.get(row[1]) or recorded.get(row[1])
            if want is None or [mask(x) for x in row] != [mask(x) for x in want[:len(row)]]:
                failures.append(f"{doc}:{n + 1}: shown {row}\n  today {want}")
    assert not failures, "\n".join(failures)
