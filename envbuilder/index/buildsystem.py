"""A source's declared PEP 517 build requirements: `[build-system].requires` of its pyproject.toml.

Read from the same places the metadata is read (the sdist's top directory, a git commit's
`<subdirectory>/pyproject.toml` blob), without running anything. A source with no pyproject.toml,
or one without a `[build-system]` table, gets PEP 518's default `setuptools>=40.8.0`, as pip
gives it; a `[build-system]` table without `requires` is an error (PEP 518 says it must have one).
"""

from __future__ import annotations

import tomllib

from envbuilder.errors import BadInput
from envbuilder.index.sourcemeta import requirement_list

#: PEP 518: "tools should use setuptools>=40.8.0" when a project declares no build system.
DEFAULT_REQUIRES = ("setuptools>=40.8.0",)


def build_system_requires(pyproject: bytes | None, where: str) -> tuple[str, ...]:
    """The requirement strings a build of this source installs before asking its backend."""
    if pyproject is None:
        return DEFAULT_REQUIRES
    try:
        data = tomllib.loads(pyproject.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{where}: pyproject.toml is not valid TOML: {exc}") from None
    table = data.get("build-system")
    if table is None:
        return DEFAULT_REQUIRES
    if not isinstance(table, dict) or "requires" not in table:
        raise BadInput(f"{where}: pyproject.toml [build-system] has no `requires` list (PEP 518 requires one)")
    return tuple(requirement_list(table["requires"], where, "requires", "build-system"))

