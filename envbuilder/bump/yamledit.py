"""Replace one scalar of a YAML file in place, leaving every other byte (comments, layout, quoting) alone.

Why not load and dump with a round-trip YAML library: a dump re-flows long lines, flow mappings and
indentation, so a one-line bump would show as a reformatted file in review. ruamel.yaml records
the line and column of each value as it parses; the edit replaces exactly that value's text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from envbuilder.errors import BadInput

_PLAIN_END = re.compile(r"\s+#|,|\}|\]|\s*$")
_SAFE_PLAIN = re.compile(r"[A-Za-z0-9=<>~!][A-Za-z0-9._+=<>~!-]*")


@dataclass(frozen=True)
class ScalarEdit:
    """The value at `keys` of `file` becomes `new`; `old` is what the file says now (for the diff)."""

    file: Path
    keys: tuple[str, ...]
    old: str
    new: str
    line: int  # 1-based

    def apply(self, text: str) -> str:
        return replace_scalar(text, self.keys, self.new, self.file)


def _node(text: str, keys: tuple[str, ...], file: Path) -> tuple[CommentedMap, str]:
    try:
        node = YAML(typ="rt", pure=True).load(text)
    except (YAMLError, ValueError) as exc:
        raise BadInput(f"{file}: invalid YAML: {exc}") from None
    for key in keys[:-1]:
        node = node.get(key) if isinstance(node, CommentedMap) else None
    if not isinstance(node, CommentedMap) or keys[-1] not in node:
        raise BadInput(f"{file}: key '{'.'.join(keys)}' is not in this file")
    return node, keys[-1]


def locate(text: str, keys: tuple[str, ...], file: Path) -> tuple[int, int, int]:
    """(line index, start column, end column) of the scalar at `keys`; BadInput if it is not a one-line scalar."""
    parent, key = _node(text, keys, file)
    if isinstance(parent[key], (dict, list)):
        raise BadInput(f"{file}: key '{'.'.join(keys)}' is a mapping or list, not a value to replace")
    line, col = parent.lc.value(key)
    source = text.splitlines(keepends=True)[line]
    end = _scalar_end(source, col)
    if end is None:
        raise BadInput(f"{file}:{line + 1}: key '{'.'.join(keys)}': its value spans lines; write it on one line")
    return line, col, end


def _scalar_end(line: str, col: int) -> int | None:
    """Where the scalar starting at `col` ends on its line (None: a quoted value that continues)."""
    quote = line[col:col + 1]
    if quote == '"':
        match = re.compile(r'"(?:[^"\\]|\\.)*"').match(line, col)
        return match.end() if match else None
    if quote == "'":
        match = re.compile(r"'(?:[^']|'')*'").match(line, col)
        return match.end() if match else None
    match = _PLAIN_END.search(line, col)
    return match.start() if match else len(line.rstrip("\r\n"))


def _spellings(value: str, quote: str) -> list[str]:
    """`value` in the old value's quoting style first, then double-quoted (JSON quoting is valid YAML)."""
    first = {"'": "'" + value.replace("'", "''") + "'", '"': None}.get(quote, value if _SAFE_PLAIN.fullmatch(value) else None)
    return [s for s in (first, json.dumps(value, ensure_ascii=False)) if s is not None]


def replace_scalar(text: str, keys: tuple[str, ...], value: str, file: Path) -> str:
    """`text` with the value at `keys` replaced by `value`, written in the old value's quoting style."""
    line, start, end = locate(text, keys, file)
    lines = text.splitlines(keepends=True)
    for spelled in _spellings(value, lines[line][start:start + 1]):
        edited = "".join([*lines[:line], lines[line][:start] + spelled + lines[line][end:], *lines[line + 1:]])
        parent, key = _node(edited, keys, file)
        if parent[key] == value:  # never write a file that does not read back as intended
            return edited
    raise BadInput(f"{file}:{line + 1}: key '{'.'.join(keys)}': could not be replaced in place")
