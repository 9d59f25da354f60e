"""Build recipes as data: how to build a binary out of an sdist, and the env knobs a source build reads.

They come from the shipped knowledge (`recipes.yaml`, `binaries.yaml`) or from a matrix's `knowledge:`
overlay, so they are untrusted text that ends up in a Dockerfile's RUN and ENV lines. The shapes here
are what lets the renderer quote them safely: names are identifiers, paths stay relative inside the
unpacked source tree, cmake arguments are single-line options. The renderer quotes them again anyway.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from envbuilder.lock.model import EnvVarName, Text
from envbuilder.lock.model import _pattern as _matching  # the lock's own shape checks, one message style
from envbuilder.model import StrictModel


def _inside_tree(value: str) -> str:
    """A path relative to the unpacked sdist: no leading '/', no '..', no empty or '.' segment."""
    parts = value.split("/")
    if value.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{value!r} is not a relative path inside the source tree (no leading '/', '..' or '.')")
    return value


RecipeName = Annotated[Text, _matching(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}",
                                       "a recipe or cmake target name (letters, digits and ._+- only)")]
TreePath = Annotated[Text, _matching(r"[A-Za-z0-9._+/-]{1,255}", "a path (letters, digits and ._+/- only)"),
                     AfterValidator(_inside_tree)]
CmakeArg = Annotated[Text, _matching(r"-\S.{0,255}", "a cmake option (starts with '-', one line)")]
AptName = Annotated[Text, _matching(r"[a-z0-9][a-z0-9+.-]{0,99}", "a Debian package name")]


class BinaryRecipe(StrictModel):
    """How to build one binary from a package's sdist; a matrix selects it with `build.target: NAME`.

    llama-cpp-python's own CMakeLists is a scikit-build wrapper for the Python bindings; its server is
    a target of the llama.cpp it vendors, which is why a recipe names a source directory of its own.
    """

    name: RecipeName
    source_dir: TreePath  # the cmake source directory inside the unpacked sdist
    cmake_target: RecipeName  # also the name the binary gets in /usr/local/bin
    output: TreePath  # the built file, relative to the cmake build directory
    cmake_defaults: tuple[CmakeArg, ...] = ()  # before the matrix's CMAKE_ARGS, which may override them
    runtime_apt: tuple[AptName, ...] = ()  # shared libraries the binary loads (verify runs it to prove it)
    source: Text


class BuildEnv(StrictModel):
    """Env knobs a source build of a package reads, beside the lock's recipe env.

    `forced` goes over everything (the gotchas: flash-attn's setup.py downloads a prebuilt wheel
    unless told to build); `cxx11_abi` names the variable set to TRUE when the ABI provider the
    build compiles against uses the C++11 ABI; `arch_spelling` is how the fact's `arch_env`
    variable writes the target arch: `number` (sm_120 -> 120) or `dotted` (sm_120 -> 12.0, as
    TORCH_CUDA_ARCH_LIST).
    """

    forced: dict[EnvVarName, Text] = Field(default_factory=dict)
    cxx11_abi: EnvVarName | None = None
    arch_spelling: Literal["number", "dotted"] = "number"
