"""Reads matrix YAML into a validated `Matrix`, with errors that name file, line and key.

ruamel.yaml keeps the line of every key, so after `extends:` merges several files we still
know which file and line each value came from; a pydantic error location is mapped back to
that provenance. Nothing here raises anything but `BadInput` for bad files.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from envbuilder.errors import BadInput
from envbuilder.matrix.schema import Matrix

Path_ = tuple[Union[str, int], ...]
# Sections merged per key rather than deeply: a child's package entry replaces the parent's.
REPLACE_PER_KEY = {("packages",), ("indexes",)}
MAX_EXTENDS_DEPTH = 8
#: A matrix is a page of YAML; these bound what a hostile one can cost before anything is built.
MAX_MATRIX_BYTES = 1 << 20
MAX_EXPANDED_NODES = 100_000  # values after alias expansion (a "billion laughs" file is billions)
_CORE_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq", "merge")}


def _tag(node: Any) -> str:
    tag = getattr(node, "tag", None)
    return str(getattr(tag, "value", tag))


def _check_nodes(file: Path, root: Any) -> None:
    """Refuse explicit tags (`!!python/...`, `!custom`) and alias expansions past MAX_EXPANDED_NODES.

    Works on the composed node graph, where an alias is the same node object: sizes are counted
    once per node (memoised), so the check itself stays linear in the file.
    """
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose children are being counted: meeting one again is a cycle
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if not children_done and id(node) in open_:
            raise BadInput(f"{file}:{node.start_mark.line + 1}: a YAML alias refers to a value that contains it "
                           "(a recursive structure): a matrix never needs one")
        tag = _tag(node)
        if tag not in _CORE_TAGS:
            line = node.start_mark.line + 1
            raise BadInput(f"{file}:{line}: YAML tag {tag.replace('tag:yaml.org,2002:', '!!')!r} is not allowed: "
                           "a matrix holds plain strings, numbers, booleans, lists and mappings")
        value = node.value
        children = ([c for pair in value for c in pair] if isinstance(value, list) and value
                    and isinstance(value[0], tuple) else value if isinstance(value, list) else [])
        if not children_done and children:
            open_.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        open_.discard(id(node))
        sizes[id(node)] = total = 1 + sum(sizes.get(id(c), 1) for c in children)
        if total > MAX_EXPANDED_NODES:
            raise BadInput(f"{file}:{node.start_mark.line + 1}: YAML aliases expand to more than "
                           f"{MAX_EXPANDED_NODES:,} values: a matrix never needs that many (an alias bomb?)")


@dataclass(frozen=True)
class Origin:
    file: Path
    line: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class _Doc:
    data: dict[str, Any]
    origins: dict[Path_, Origin] = field(default_factory=dict)


def _plain(node: Any, file: Path, path: Path_, origins: dict[Path_, Origin]) -> Any:
    """Convert ruamel nodes to plain Python, recording each key's line."""
    if isinstance(node, CommentedMap):
        out = {}
        for key, value in node.items():
            line = node.lc.key(key)[0] + 1
            sub = (*path, str(key))
            origins[sub] = Origin(file, line)
            out[str(key)] = _plain(value, file, sub, origins)
        return out
    if isinstance(node, CommentedSeq):
        out_list = []
        for i, value in enumerate(node):
            origins[(*path, i)] = Origin(file, node.lc.item(i)[0] + 1)
            out_list.append(_plain(value, file, (*path, i), origins))
        return out_list
    return node


def _read_yaml(file: Path) -> _Doc:
    try:
        if file.stat().st_size > MAX_MATRIX_BYTES:
            raise BadInput(f"{file}: {file.stat().st_size:,} bytes; a matrix may be at most {MAX_MATRIX_BYTES:,}")
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{file}: no such matrix file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{file}: cannot read: {exc}") from None
    try:
        composed = YAML(typ="rt", pure=True).compose(text)
        if composed is not None:
            _check_nodes(file, composed)
        node = YAML(typ="rt", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise BadInput(f"{file}{line}: invalid YAML: {exc.problem or exc.context}") from None
    except (YAMLError, ValueError, TypeError, RecursionError) as exc:
        raise BadInput(f"{file}: invalid YAML: {exc}") from None
    if not isinstance(node, CommentedMap):
        raise BadInput(f"{file}:1: a matrix must be a YAML mapping (schema, target, platform, packages, ...)")
    origins: dict[Path_, Origin] = {(): Origin(file, 1)}
    return _Doc(_plain(node, file, (), origins), origins)


def _merge(base: _Doc, child: _Doc, path: Path_ = ()) -> None:
    """Merge child into base in place: maps deep, lists and scalars replaced, `null` deletes."""
    for key, value in child.data.items():
        sub = (*path, key)
        _drop_origins(base.origins, sub)
        if value is None and path != ():
            base.data.pop(key, None)
        elif isinstance(value, dict) and isinstance(base.data.get(key), dict) and path not in REPLACE_PER_KEY:
            _merge(_Doc(base.data[key], base.origins), _Doc(value, child.origins), sub)
        else:
            base.data[key] = value
        base.origins.update({p: o for p, o in child.origins.items() if p[: len(sub)] == sub})


def _drop_origins(origins: dict[Path_, Origin], prefix: Path_) -> None:
    for p in [p for p in origins if p[: len(prefix)] == prefix and p != prefix]:
        del origins[p]


def _load_merged(file: Path, depth: int = 0) -> _Doc:
    doc = _read_yaml(file)
    parent = doc.data.get("extends")
    if parent is None:
        return doc
    if not isinstance(parent, str):
        raise BadInput(f"{doc.origins[('extends',)]}: key 'extends': must be a matrix file name")
    if depth >= MAX_EXTENDS_DEPTH:
        raise BadInput(f"{doc.origins[('extends',)]}: key 'extends': chain deeper than {MAX_EXTENDS_DEPTH} (a cycle?)")
    try:
        base_file = (file.parent / parent).resolve()
        if not base_file.suffix:
            base_file = base_file.with_suffix(".yaml")
        found = base_file.is_file()
    except (OSError, ValueError):  # a NUL byte, an over-long name, the root directory
        found = False
    if not found:
        raise BadInput(f"{doc.origins[('extends',)]}: key 'extends': {parent!r} not found beside {file.name}")
    merged = _load_merged(base_file, depth + 1)
    _merge(merged, doc)
    return merged


def load_matrix(file: Path) -> tuple[Matrix, dict[Path_, Origin]]:
    doc = _load_merged(Path(file))
    try:
        return Matrix.model_validate(doc.data), doc.origins
    except ValidationError as exc:
        raise BadInput(_explain(exc, doc.origins, Path(file))) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise BadInput(f"{file}: {exc}") from None


#: Matrix keys that are not resolution inputs: benchmark gates, evidence of runs, the image's layering.
NOT_LOCK_INPUTS = {"smoke", "validated", "layers"}


def matrix_digest(matrix: Matrix) -> str:
    """Digest of the merged, validated matrix: comments and layout changes do not stale a lock.

    `smoke:`, `validated:` and `layers:` are left out: recording a run, tuning a gate or cutting the
    image into other layers must not make the lock stale, since none changes what is installed.
    """
    data = matrix.model_dump(mode="json", by_alias=True, exclude=NOT_LOCK_INPUTS)
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


# --- error explanation -----------------------------------------------------------------------


def _explain(exc: ValidationError, origins: dict[Path_, Origin], file: Path) -> str:
    lines = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        origin = _nearest_origin(loc, origins) or Origin(file, 1)
        key = ".".join(str(p) for p in loc) or "(top level)"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown key" + _suggest(loc)
        elif err["type"] == "missing":
            message = "required key is missing"
        elif _scalar(err.get("input")) and err["type"] in ("string_type", "model_type", "model_attributes_type"):
            message = _type_hint(err, loc, origin)
        lines.append(f"{origin}: key '{key}': {message}")
    return "invalid matrix\n  " + "\n  ".join(lines)


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) or (isinstance(value, str) and "\n" not in value)


def _raw_text(origin: Origin, key: str) -> str | None:
    """The value as written on its line (YAML reads `3.10` as the number 3.1: the user wrote 3.10)."""
    try:
        line = origin.file.read_text(errors="replace").splitlines()[origin.line - 1]
    except (OSError, IndexError):
        return None
    match = re.search(rf"(?:^|[\s{{,]){re.escape(key)}\s*:\s*([^\s,}}#]+)", line)
    return match.group(1) if match else None


def _type_hint(err: dict, loc: Path_, origin: Origin) -> str:
    """The fix for a YAML type slip: quote a number meant as text; give a mapping's keys and an example."""
    value = err["input"]
    key = str(loc[-1]) if loc else ""
    raw = _raw_text(origin, key) or (str(value).lower() if isinstance(value, bool) else str(value))
    kind = "a boolean" if isinstance(value, bool) else "a number" if isinstance(value, (int, float)) else "a string"
    model = _model_in(_annotation_at(loc))
    if model is None:  # a string was wanted
        return f"expected a string, but YAML reads {raw} as {kind}: quote it ({key}: \"{raw}\")"
    if len(loc) == 2 and loc[0] == "packages":  # `name: "==1.2"` is shorthand for `name: {version: "==1.2"}`
        return (f"expected a version specifier string or a mapping, but YAML reads {raw} as {kind}: "
                f"write {key}: \"=={raw}\" (quoted, with an operator)")
    fields = _aliases(model)
    required = [alias for alias, name in fields.items() if model.model_fields[name].is_required()]
    keys = ", ".join(f"{k} (required)" if k in required else k for k in fields)
    example = f"; e.g. {key}: {{{required[0]}: \"{raw}\"}}" if len(required) == 1 else ""
    return f"expected a mapping with keys {keys}, not {kind} ({raw}){example}"


def _annotation_at(loc: Path_) -> Any:
    tp: Any = Matrix
    for part in loc:
        tp = _step(tp, part)
        if tp is None:
            return None
    return tp


def _nearest_origin(loc: Path_, origins: dict[Path_, Origin]) -> Origin | None:
    for n in range(len(loc), -1, -1):
        if loc[:n] in origins:
            return origins[loc[:n]]
    return None


def _suggest(loc: Path_) -> str:
    valid = _fields_at(Matrix, loc[:-1])
    close = difflib.get_close_matches(str(loc[-1]), valid, n=1, cutoff=0.6)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return f" (valid keys: {', '.join(sorted(valid))})" if valid else ""


def _fields_at(model: Any, loc: Path_) -> list[str]:
    """The keys accepted at a location, stepping through models, dicts and sequences."""
    tp: Any = model
    for part in loc:
        tp = _step(tp, part)
        if tp is None:
            return []
    found = _model_in(tp)
    return list(_aliases(found)) if found is not None else []


def _step(tp: Any, part: Any) -> Any:
    origin = get_origin(tp)
    if origin is dict:
        return get_args(tp)[1]
    if origin in (tuple, list):
        return get_args(tp)[0]
    model = _model_in(tp)
    name = _aliases(model).get(part) if model is not None else None
    return model.model_fields[name].annotation if name else None


def _model_in(tp: Any) -> Any:
    """The model class in `tp` or in `Optional[tp]`."""
    for candidate in (tp, *get_args(tp)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _aliases(model: type[BaseModel]) -> dict[str, str]:
    return {(f.alias or name): name for name, f in model.model_fields.items()}
