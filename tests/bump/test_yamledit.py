"""The in-place scalar edit: only the one value changes, in any layout a matrix may use."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from envbuilder.bump.yamledit import replace_scalar
from envbuilder.errors import BadInput

F = Path("m.yaml")
LAYOUTS = [
    'packages:\n  {name}: {{git: "u", rev: {old}, subdirectory: python}}   # trailing\n',
    "packages:\n  {name}:\n    git: u\n    rev: {old}\n    note: x\n",
    "packages:\n  {name}:\n    git: u\n    rev: '{old}' # quoted\n",
    'packages:\n  "{name}": {{"git": "u", "rev": "{old}"}}\n',
    "# header\npackages:   # the packages\n  {name}: {{rev: {old},git: u}}\n  other: {{rev: keep}}\n",
]


def _load(text: str):
    return YAML(typ="safe", pure=True).load(text)


@settings(max_examples=150, deadline=None)
@given(layout=st.sampled_from(LAYOUTS), name=st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True),
       old=st.from_regex(r"[0-9a-f]{40}", fullmatch=True),
       new=st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30))
def test_only_the_value_changes(layout, name, old, new):
    text = layout.format(name=name, old=old)
    edited = replace_scalar(text, ("packages", name, "rev"), new, F)
    before, after = _load(text), _load(edited)
    assert after["packages"][name]["rev"] == new
    after["packages"][name]["rev"] = before["packages"][name]["rev"]
    assert after == before  # nothing else moved
    changed = [i for i, (a, b) in enumerate(zip(text.splitlines(), edited.splitlines())) if a != b]
    assert len(changed) <= 1 and len(text.splitlines()) == len(edited.splitlines())


def test_shorthand_specifier_keeps_its_comment_and_style():
    text = 'packages:\n  torch: "==2.9.1"   # pinned: sgl-kernel needs it\n  tqdm: ">=4"\n'
    assert replace_scalar(text, ("packages", "torch"), "==2.10.0", F) == text.replace("2.9.1", "2.10.0")


@pytest.mark.parametrize("text, keys, why", [
    ('packages:\n  a:\n    rev: "abc\n      def"\n', ("packages", "a", "rev"), "spans lines"),
    ("packages:\n  a: {rev: x}\n", ("packages", "a"), "mapping or list"),
    ("packages:\n  a: {rev: x}\n", ("packages", "b", "rev"), "not in this file"),
])
def test_what_cannot_be_edited_in_place_is_bad_input(text, keys, why):
    with pytest.raises(BadInput, match=why):
        replace_scalar(text, keys, "new", F)


def test_a_value_yaml_would_read_as_another_type_is_quoted():
    text = "packages:\n  a: {rev: abc}\n"
    for value in ("1.5", "true", "null", "- x", "a: b", "#x"):
        assert _load(replace_scalar(text, ("packages", "a", "rev"), value, F))["packages"]["a"]["rev"] == value
    assert json.dumps("1.5") in replace_scalar(text, ("packages", "a", "rev"), "1.5", F)
