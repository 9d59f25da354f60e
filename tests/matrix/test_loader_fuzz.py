"""Fuzz the matrix loader: broken YAML text and wrong-typed structures give BadInput, never a traceback."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from envbuilder.errors import BadInput
from envbuilder.matrix import load_target
from tests.resolve.project import matrix_yaml

VALID = matrix_yaml("fuzz", {"app": "==1.0", "lib": {"version": ">=1", "override": True, "extras": ["x"]},
                             "src": {"version": "==2.0", "build": {"from": "sdist", "env": {"A": "1"}},
                                     "metadata": {"requires_dist": ["app"]}}},
                    extra="hardware:\n  gpu: {name: G, arch: sm_120, count: 8, memory_gib: 96}\n"
                          "  driver: {min: '590.48.01'}\nvalidated:\n  - {date: '2026-02', result: ok, by: me}\n")
YAML_CHARS = ":-[]{},#&*!|>'\"%@`?\t\n ~0123456789abcxyz_.=<\\"
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
_DIR = Path(tempfile.mkdtemp(prefix="envbuilder-fuzz-"))
(_DIR / "matrices").mkdir()


def _load(text: str) -> None:
    """Loading either succeeds or raises BadInput with a message; anything else fails the test."""
    (_DIR / "matrices" / "fuzz.yaml").write_text(text, encoding="utf-8")
    (_DIR / "matrices" / "parent.yaml").write_text(VALID.replace("target: fuzz", "target: parent"))
    try:
        load_target("fuzz", _DIR)
    except BadInput as exc:
        assert str(exc).strip()
        assert exc.exit_code == 2


@st.composite
def mutated_text(draw: st.DrawFn) -> str:
    text = VALID
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        chunk = draw(st.text(alphabet=YAML_CHARS, min_size=1, max_size=4))
        end = min(len(text), at + draw(st.integers(1, 12)))
        text = {"insert": text[:at] + chunk + text[at:], "delete": text[:at] + text[end:],
                "replace": text[:at] + chunk + text[end:]}[op]
    return text


@given(mutated_text())
@SETTINGS
def test_broken_yaml_text(text: str):
    _load(text)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
@SETTINGS
def test_arbitrary_text(text: str):
    _load(text)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=12), st.sampled_from(["==1.0", "sm_120", "3.12", "glibc_2.39", "a" * 40,
                                                           "parent.yaml", "sdist", "linux", "x86_64", "/", "a\0b"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=3)),
                      max_leaves=8)


def _retype(data: object, draw: st.DrawFn) -> object:
    """The valid matrix with some values replaced by values of random types, and random keys added."""
    if isinstance(data, dict):
        out = {k: (draw(values) if draw(st.integers(0, 5)) == 0 else _retype(v, draw)) for k, v in data.items()}
        if draw(st.integers(0, 5)) == 0:
            out[draw(st.sampled_from(["extends", "packages", "hardware", "bogus", "indexes", "knowledge",
                                      "serve", "smoke", "git", "rev"]))] = draw(values)
        return out
    if isinstance(data, list):
        return [_retype(v, draw) for v in data]
    return data


@st.composite
def wrong_typed(draw: st.DrawFn) -> str:
    data = YAML(typ="safe", pure=True).load(VALID)
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(_retype(data, draw), stream)
    return stream.getvalue()


@given(wrong_typed())
@settings(SETTINGS, max_examples=80)
def test_wrong_typed_structures(text: str):
    _load(text)


@given(st.text(max_size=300))
@SETTINGS
def test_any_extends_value(parent: str):
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump({"extends": parent, **YAML(typ="safe", pure=True).load(VALID)}, stream)
    _load(stream.getvalue())
