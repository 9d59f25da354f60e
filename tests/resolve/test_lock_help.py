"""`lock --help` says what TARGET may be: a name or a matrix file path (both work)."""

from __future__ import annotations

import subprocess
import sys


def test_lock_help_names_matrix_paths():
    proc = subprocess.run([sys.executable, "-m", "envbuilder", "lock", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    assert "lock [OPTIONS] [TARGET|MATRIX.yaml]..." in proc.stdout
    assert "the path of a matrix" in " ".join(proc.stdout.split())


def test_lock_accepts_a_matrix_path(project, default_index):
    from tests.resolve.project import publish

    publish(default_index, "app", "1.0")
    path = project.write_matrix("by-path", {"app": "==1.0"})
    result = project.run("lock", str(path))
    assert result.rc == 0, result.text
    assert project.read_lock("by-path").package("app").version == "1.0"
