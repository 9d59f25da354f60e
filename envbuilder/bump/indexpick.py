"""The newest version of an index package that the matrix's constraint admits, as the resolver would see it.

Pre-releases count only where the constraint names one (PEP 440, the resolver's own policy in
envbuilder.resolve.factory); yanked files never. The resolver makes the final choice at re-lock
(other packages' requirements may hold the package lower), so this is what the index offers,
shown in `--dry-run` and beside the locked version in the PR body.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from envbuilder.errors import BadInput
from envbuilder.index.client import IndexClient
from envbuilder.resolve.factory import _names_pre as names_prerelease  # the resolver's own pre-release rule


def newest_allowed(client: IndexClient, name: str, specifier: str, index: str = "pypi") -> str | None:
    """The highest non-yanked version on `index` inside `specifier`; None when the index has none."""
    spec = SpecifierSet(specifier)
    versions = {f.version for f in client.files(name, index) if f.valid and not f.is_yanked}
    allowed = list(spec.filter(versions, prereleases=names_prerelease(spec)))
    return str(max(allowed)) if allowed else None


def exact_version(text: str) -> str:
    """`--version X`: a PEP 440 version, normalised; anything else is BadInput."""
    try:
        return str(Version(text))
    except InvalidVersion:
        raise BadInput(f"--version {text!r} is not a PEP 440 version (e.g. 2.10.0)") from None
