"""The lock model stays pure: it never imports the index, the resolver or the exports."""

from __future__ import annotations

import ast
from pathlib import Path

import envbuilder.lock

FORBIDDEN = ("envbuilder.resolve", "envbuilder.index", "envbuilder.export", "envbuilder.build")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


def test_lock_package_imports_nothing_impure():
    folder = Path(envbuilder.lock.__file__).parent
    bad = [(p.name, name) for p in sorted(folder.rglob("*.py")) for name in _imports(p)
           if name.startswith(FORBIDDEN)]
    assert bad == []
    assert not (folder / "export").exists()
