"""Fail CI when the test report ran fewer tests from a folder than the folder defines.

    python .ci/check_junit.py REPORT.xml FOLDER [FOLDER...] [-m MARKEXPR] [--allow-skips]

Why: pytest's default `norecursedirs` silently dropped tests/build/ for months while CI stayed
green. The defined tests are counted by a separate `pytest --collect-only` that names every test
file of FOLDER explicitly (an explicit file is collected whatever `norecursedirs`, `testpaths` or a
conftest's ignore rules say), with the same `-m` expression as the real run; parametrised tests
count once per parameter set, as pytest reports them. Every defined test id must appear in the
junit report as run (passed, failed or errored); a skipped or absent one fails the check unless
--allow-skips (then only absent ones fail). Exit 0 ok, 1 short, 2 bad input.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def defined_ids(folder: Path, markexpr: str | None) -> set[str]:
    files = sorted(str(p.relative_to(REPO)) for p in folder.rglob("*.py")
                   if p.name.startswith("test_") or p.name.endswith("_test.py"))
    if not files:
        return set()
    argv = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files]
    if markexpr:
        argv += ["-m", markexpr]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
    if done.returncode not in (0, 5):
        sys.exit(f"check_junit: collecting {folder} failed (exit {done.returncode}):\n{done.stdout[-4000:]}")
    return {line.strip() for line in done.stdout.splitlines() if "::" in line and not line.startswith(" ")}


def reported(report: Path) -> dict[str, str]:
    """Test id -> outcome (passed, failed, error, skipped) from a junit XML file."""
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError) as exc:
        sys.exit(f"check_junit: cannot read the test report {report}: {exc}")
    out: dict[str, str] = {}
    for case in root.iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag if child.tag != "failure" else "failed"
                break
        out[_node_id(case.get("classname", ""), case.get("name", ""))] = outcome
    return out


def _node_id(classname: str, name: str) -> str:
    """junit's classname `tests.build.test_x.TestY` + name -> pytest's `tests/build/test_x.py::TestY::name`."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = REPO.joinpath(*parts[:cut]).with_suffix(".py")
        if module.is_file():
            return "::".join([str(module.relative_to(REPO)), *parts[cut:], name])
    return f"{classname}::{name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("-m", dest="markexpr")
    parser.add_argument("--allow-skips", action="store_true")
    args = parser.parse_args(argv)
    results = reported(args.report)
    if not results:
        print(f"check_junit: {args.report} holds no test at all", file=sys.stderr)
        return 1
    short = False
    for folder in args.folders:
        if not (REPO / folder).is_dir():
            print(f"check_junit: {folder} is not a folder of this repository", file=sys.stderr)
            return 2
        defined = defined_ids(REPO / folder, args.markexpr)
        missing = sorted(t for t in defined if t not in results)
        skipped = sorted(t for t in defined if results.get(t) == "skipped")
        ran = len(defined) - len(missing) - len(skipped)
        allowed = " (allowed)" if args.allow_skips and skipped else ""
        print(f"check_junit: {folder}: {len(defined)} tests defined, {ran} ran, "
              f"{len(skipped)} skipped{allowed}, {len(missing)} absent from the report")
        if args.allow_skips:
            skipped = []
        if not defined:
            print(f"check_junit: {folder} defines no test", file=sys.stderr)
            short = True
        for test in missing:
            print(f"  absent:  {test}", file=sys.stderr)
        for test in skipped:
            print(f"  skipped: {test}", file=sys.stderr)
        short = short or bool(missing or skipped)
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
