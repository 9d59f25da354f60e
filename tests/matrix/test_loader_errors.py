"""Every bad matrix is a BadInput (exit 2) whose message names the file, the line and the key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envbuilder.errors import BadInput
from envbuilder.matrix import load_target
from tests.resolve.project import PINNED_IMAGE, matrix_yaml

BASE = matrix_yaml("{name}", {"app": "==1.0"})  # lines: 1 schema, 2 target, 3 platform, 4 toolchain, 5 packages, 6 app


def _write(root: Path, name: str, text: str) -> Path:
    path = root / "matrices" / f"{name}.yaml"
    path.write_text(text.replace("{name}", name))
    return path


def _error(root: Path, name: str, text: str) -> str:
    _write(root, name, text)
    with pytest.raises(BadInput) as info:
        load_target(name, root)
    assert info.value.exit_code == 2
    return str(info.value)


# (case, matrix text, line, key, words the message must hold)
CASES = [
    ("unknown-key", BASE + "hardware:\n  gpu: {name: x, arch: sm_120, count: 1, memory_gib: 1, cout: 2}\n",
     8, "hardware.gpu.cout", "did you mean 'count'"),
    ("unknown-top", BASE + "pakages: {}\n", 7, "pakages", "did you mean 'packages'"),
    ("unknown-package-key", BASE + "  lib:\n    version: '>=1'\n    overide: true\n",
     9, "packages.lib.overide", "did you mean 'override'"),
    ("wrong-type-python", BASE.replace('python: "3.12"', "python: 3.12"), 3, "platform.python",
     'YAML reads 3.12 as a number: quote it (python: "3.12")'),
    ("python-3.10-is-3.1", BASE.replace('python: "3.12"', "python: 3.10"), 3, "platform.python",
     'YAML reads 3.10 as a number: quote it (python: "3.10")'),
    ("driver-number", BASE + "hardware:\n  driver: 570\n", 8, "hardware.driver",
     'expected a mapping with keys min (required), not a number (570); e.g. driver: {min: "570"}'),
    ("gpu-string", BASE + "hardware: {gpu: sm_120}\n", 7, "hardware.gpu",
     "expected a mapping with keys name (required), arch (required), count (required), memory_gib (required), "
     "not a string (sm_120)"),
    ("package-number", BASE + "  lib: 2.9\n", 7, "packages.lib",
     'YAML reads 2.9 as a number: write lib: "==2.9"'),
    ("bool-for-string", BASE + "description: true\n", 7, "description",
     'YAML reads true as a boolean: quote it (description: "true")'),
    ("wrong-type-count", BASE + "hardware: {gpu: {name: x, arch: sm_120, count: many, memory_gib: 1}}\n",
     7, "hardware.gpu.count", "integer"),
    ("wrong-type-packages", BASE.replace('packages:\n  "app": "==1.0"\n', "packages: [app]\n"), 5, "packages",
     "dictionary"),
    ("wrong-type-schema", BASE.replace("schema: 1", "schema: 2"), 1, "schema", "1"),
    ("bad-machine", BASE.replace("x86_64", "riscv64"), 3, "platform.machine", "x86_64"),
    ("bad-libc", BASE.replace("glibc_2.39", "musl"), 3, "platform.libc", "pattern"),
    ("bad-specifier", BASE + "  lib: '=>1'\n", 7, "packages.lib.version", "not a version specifier"),
    ("bad-specifier-table", BASE + "  lib:\n    version: '~=1'\n", 8, "packages.lib.version",
     "not a version specifier"),
    ("bad-arch", BASE + "hardware:\n  gpu: {name: x, arch: sm120, count: 1, memory_gib: 1}\n", 8,
     "hardware.gpu.arch", "sm_120"),
    ("bad-driver", BASE + "hardware:\n  driver: {min: latest}\n", 8, "hardware.driver.min", "not a version"),
    ("git-short-sha", BASE + "  lib:\n    git: https://example.invalid/lib.git\n    rev: abc1234\n"
     "    metadata: {version: '1.0'}\n", 7, "packages.lib", "full 40-hex commit"),
    ("git-branch", BASE + "  lib: {git: 'https://example.invalid/lib.git', rev: main, metadata: {version: '1'}}\n",
     7, "packages.lib", "full 40-hex commit"),
    ("rev-without-git", BASE + "  lib: {version: '==1', rev: '" + "a" * 40 + "'}\n", 7, "packages.lib", "git"),
    ("unknown-index", BASE + "  lib: {version: '>=1', index: private}\n", 1, "(top level)", "private"),
    ("build-from", BASE + "  lib: {version: '>=1', build: {from: source}}\n", 7, "packages.lib.build.from",
     "sdist"),
    ("same-package-twice", BASE + "  App: '==2.0'\n", 5, "packages", "name the same package"),
    ("target-name", BASE.replace("target: {name}", "target: Bad_Name"), 2, "target", "pattern"),
    ("missing-platform", "schema: 1\ntarget: {name}\n" + BASE.split("\n", 3)[3], 1, "platform",
     "required key is missing"),
    ("missing-packages", "\n".join(BASE.splitlines()[:4]) + "\n", 1, "packages", "required key is missing"),
    ("missing-python", BASE.replace(', python: "3.12"', ""), 3, "platform.python", "required key is missing"),
    ("validated-type", BASE + "validated: [{date: 2026-02, result: ok}]\n", 7, "validated.0.by",
     "required key is missing"),
]


@pytest.mark.parametrize(("case", "text", "line", "key", "words"), CASES, ids=[c[0] for c in CASES])
def test_error_names_file_line_and_key(tmp_path: Path, case: str, text: str, line: int, key: str, words: str):
    (tmp_path / "matrices").mkdir()
    message = _error(tmp_path, case, text)
    assert f"{case}.yaml:{line}: key '{key}'" in message, message
    assert words in message, message
    assert "Traceback" not in message


def test_yaml_syntax_error_names_line(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    message = _error(tmp_path, "syntax", BASE + "  lib: [unclosed\nhardware: {}\n")
    assert re.search(r"syntax\.yaml:\d+: invalid YAML", message), message
    message = _error(tmp_path, "tab", BASE + "\tlib: '1'\n")
    assert "tab.yaml:7: invalid YAML" in message, message


def test_duplicate_key_is_an_error(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    message = _error(tmp_path, "dup", BASE + "  app: '==2.0'\n")
    assert "dup.yaml:7: invalid YAML" in message and "duplicate key" in message and '"app"' in message


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "", "42\n", "~\n"],
                         ids=["list", "string", "empty", "number", "null"])
def test_top_level_must_be_a_mapping(tmp_path: Path, text: str):
    (tmp_path / "matrices").mkdir()
    assert "top.yaml:1: a matrix must be a YAML mapping" in _error(tmp_path, "top", text)


def test_target_must_match_file_name(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    message = _error(tmp_path, "named", BASE.replace("target: {name}", "target: other"))
    assert "named.yaml:2: key 'target'" in message and "'other'" in message


def test_unknown_target_lists_known_ones(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    _write(tmp_path, "alpha", BASE)
    with pytest.raises(BadInput, match=r"unknown target 'beta' \(known: alpha\)"):
        load_target("beta", tmp_path)


# --- extends ---------------------------------------------------------------------------------

PARENT = matrix_yaml("{name}", {"app": "==1.0", "lib": {"version": ">=1", "override": True}, "extra": "*"},
                     extra="description: the parent\nhardware:\n  gpu: {name: GPU, arch: sm_90, count: 8, memory_gib: 80}\n"
                           "  driver: {min: '570.26'}\n")


def test_extends_chain_override_and_null_deletion(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    _write(tmp_path, "base", PARENT.replace("target: {name}", "target: base"))
    _write(tmp_path, "middle", "extends: base.yaml\ntarget: middle\nplatform: {python: '3.11'}\n"
                               "hardware:\n  gpu: {arch: sm_120}\n")
    _write(tmp_path, "child", "extends: middle\ntarget: child\n"
                              "hardware:\n  driver: null\n"
                              "packages:\n  lib: '==2.0'\n  extra: null\n  new: '>=3'\n")
    target = load_target("child", tmp_path)
    assert target.name == "child"
    assert target.description == "the parent"               # inherited through two levels
    assert target.platform.python == "3.11"                   # middle overrides one key ...
    assert target.platform.libc == "glibc_2.39"               # ... and keeps its siblings (deep merge)
    assert target.hardware.gpu.arch == "sm_120" and target.hardware.gpu.count == 8
    assert target.hardware.driver is None                     # null deletes
    assert set(target.packages) == {"app", "lib", "new"}      # null deleted `extra`
    lib = target.packages["lib"]
    assert lib.version == "==2.0" and lib.override is False   # a package entry is replaced whole
    assert target.source_path.name == "child.yaml"


def test_extends_error_points_at_the_file_that_holds_the_value(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    _write(tmp_path, "base", PARENT.replace("target: {name}", "target: base").replace("sm_90", "sm90"))
    _write(tmp_path, "child", "extends: base.yaml\ntarget: child\npackages:\n  lib: '=>2'\n")
    message = _error(tmp_path, "child", (tmp_path / "matrices" / "child.yaml").read_text())
    assert "base.yaml:11: key 'hardware.gpu.arch'" in message, message     # inherited bad value
    assert "child.yaml:4: key 'packages.lib.version'" in message, message  # the child's own


def test_extends_cycle(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    _write(tmp_path, "a", "extends: b.yaml\n" + BASE)
    _write(tmp_path, "b", "extends: a.yaml\n" + BASE)
    message = _error(tmp_path, "a", "extends: b.yaml\n" + BASE)
    assert re.search(r"[ab]\.yaml:1: key 'extends'", message) and "cycle" in message, message


def test_extends_missing_file(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    message = _error(tmp_path, "orphan", "schema: 1\nextends: nowhere.yaml\n" + BASE.split("\n", 1)[1])
    assert "orphan.yaml:2: key 'extends'" in message and "'nowhere.yaml' not found" in message


def test_extends_wrong_type(tmp_path: Path):
    (tmp_path / "matrices").mkdir()
    message = _error(tmp_path, "wrong", "extends: [a, b]\n" + BASE)
    assert "wrong.yaml:1: key 'extends'" in message


# --- through the CLI -------------------------------------------------------------------------

def test_cli_exit_2_without_traceback(mproject):
    (mproject.root / "matrices" / "broken.yaml").write_text(BASE.replace("{name}", "broken") +
                                                            "  lib: {version: '>=1', overide: true}\n")
    result = mproject.run("lock", "--check", "broken")
    assert result.rc == 2
    assert "broken.yaml:7: key 'packages.lib.overide': unknown key (did you mean 'override'?)" in result.err
    assert "Traceback" not in result.text


def test_base_image_tag_warns(mproject, monkeypatch):
    text = BASE.replace("{name}", "tagged").replace(PINNED_IMAGE, "debian:bookworm-slim")
    (mproject.root / "matrices" / "tagged.yaml").write_text(text)
    target = load_target("tagged", mproject.root)
    assert not target.toolchain.base_image_pinned
    (warning,) = target.warnings
    assert "tagged.yaml:4" in warning and "'debian:bookworm-slim' is a tag, not a digest" in warning
    assert load_target("tagged", mproject.root).warnings == [warning]
    pinned = BASE.replace("{name}", "pinned")
    (mproject.root / "matrices" / "pinned.yaml").write_text(pinned)
    assert load_target("pinned", mproject.root).warnings == []


@pytest.mark.parametrize("parent", ["a\0b", "/", ".", "x" * 5000, "../matrices"],
                         ids=["nul", "root", "dot", "long", "directory"])
def test_extends_odd_names_are_bad_input(tmp_path: Path, parent: str):
    (tmp_path / "matrices").mkdir()
    escaped = parent.replace("\0", "\\0")
    message = _error(tmp_path, "odd", f'extends: "{escaped}"\n' + BASE)
    assert "odd.yaml:1: key 'extends'" in message and "not found" in message


def test_knowledge_overlay_is_validated_by_the_loader(tmp_path: Path):
    """A bad overlay entry used to load and then crash `lock` with a pydantic traceback."""
    (tmp_path / "matrices").mkdir()
    message = _error(tmp_path, "overlay", BASE + "knowledge:\n  known_issues:\n    - {id: x, package: app}\n")
    assert "overlay.yaml:9: key 'knowledge.known_issues.0.source': required key is missing" in message, message
    good = BASE + ("knowledge:\n  known_issues:\n    - {id: app-1, package: app, affected: '<2', severity: warning,"
                   " summary: s, source: 'https://example.invalid/1'}\n")
    _write(tmp_path, "overlay", good)
    (issue,) = load_target("overlay", tmp_path).knowledge.known_issues
    assert issue.affects("app", "1.0")
