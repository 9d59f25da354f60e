"""Reading a lock: the writer's bytes read back equal; a hand-edited or broken lock is BadInput, never a traceback."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envbuilder.errors import BadInput
from envbuilder.lock import Artifact, BuildRecipe, Facets, Lock, LockedPackage, Source, dumps, loads

LOCK = Lock(
    target="demo", matrix_digest="sha256:" + "1" * 64, knowledge_digest="sha256:" + "2" * 64,
    environment={"python": "3.12", "os": "linux"}, toolchain={"base-image": "img@sha256:" + "3" * 64, "cuda": "12.8"},
    indexes=("pypi",),
    packages=(
        LockedPackage("torch", "2.9.1", Source(index="pypi"),
                      (Artifact("torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl", "a" * 64, 900, "wheel"),),
                      ("triton==3.5.1",), requested="==2.9.1",
                      facets=Facets(torch="2.9", cuda="12.8", cxx11_abi=True, sass=("sm_120",))),
        LockedPackage("flash-attn", "2.8.3", Source(index="pypi"), (Artifact("flash_attn-2.8.3.tar.gz", "b" * 64, 10, "sdist"),),
                      ("torch",), build=BuildRecipe({"X": "1"}, "12.8", ("torch==2.9.1",), "sha256:" + "c" * 64),
                      overridden=("x 1.0: flash-attn<2",)),
        LockedPackage("engine", "0.5.9+g1", Source(git="https://example.invalid/e.git", commit="d" * 40,
                                                   subdirectory="python")),
    ),
    findings=("engine: a warning",),
)
TEXT = dumps(LOCK)


def test_round_trip_is_byte_identical():
    assert loads(TEXT).to_dict() == LOCK.to_dict()
    assert dumps(loads(TEXT)) == TEXT
    assert dumps(LOCK) == TEXT  # no clock, no randomness


def test_packages_are_written_sorted():
    names = [line.split('"')[1] for line in TEXT.splitlines() if line.startswith("name = ")]
    assert names == sorted(names)


TOML_CHARS = '[]{}="., \n#0123456789abcxyz-_'


@st.composite
def edited(draw: st.DrawFn) -> str:
    text = TEXT
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        end = min(len(text), at + draw(st.integers(0, 10)))
        text = text[:at] + draw(st.text(alphabet=TOML_CHARS, max_size=5)) + text[end:]
    return text


@given(edited())
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_hand_edited_lock_is_bad_input_or_reads(text: str):
    try:
        lock = loads(text, "demo.lock.toml")
    except BadInput as exc:
        assert str(exc).startswith("demo.lock.toml")
        return
    dumps(lock)  # whatever reads must also write (lock --check compares the two)


def test_wrong_shapes_are_bad_input():
    for broken in (TEXT.replace('[package.source]\nindex = "pypi"', 'source = "x"', 1),
                   TEXT.replace("[package.build]", "[[package.build]]", 1),
                   TEXT.replace("[package.facets]", "[package.facets]\nsass = 5", 1),
                   TEXT.replace("lock-version = 1", "lock-version = 2")):
        assert broken != TEXT
        try:
            loads(broken, "x.lock.toml")
        except BadInput as exc:
            assert "x.lock.toml" in str(exc)
        else:
            raise AssertionError(f"read without complaint:\n{broken}")
