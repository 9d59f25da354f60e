"""The submodules a commit records, read from an untrusted repository and checked before use.

A repository's `.gitmodules` is input like any other: its paths and URLs are checked before git is
asked to fetch or write anything. A path must stay inside the work folder (relative, no `..`, no
`.git` component); a URL must use an allowed transport (file, https, ssh, git; never `ext::`, which
runs a command) and must not look like an option. Relative URLs (`../lib.git`) are resolved against
the superproject's URL, as `git submodule` does. Each submodule is pinned by the commit the
superproject's tree records (its gitlink), never by a branch.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

from envbuilder.errors import BadInput
from envbuilder.index.git import FULL_SHA, GitError, GitSources

ALLOWED_SCHEMES = ("file", "https", "ssh", "git")  # not plain http: a repository's own links must be secure
_SCP_LIKE = re.compile(r"[A-Za-z0-9._~-]+@[A-Za-z0-9.-]+:[^:]")  # user@host:path, git's ssh shorthand


@dataclass(frozen=True)
class Submodule:
    """A gitlink of the superproject: where it goes, where it comes from, and its pinned commit."""

    path: str
    url: str
    commit: str


def submodules(sources: GitSources, repo: Path, commit: str, under: str | None, gitmodules: Path,
               super_url: str) -> list[Submodule]:
    """The gitlinks of `commit` below `under` (all if None), each with its checked URL.

    `gitmodules` is the `.gitmodules` file of the checked-out commit (it may be absent).
    """
    links = _gitlinks(sources, repo, commit, under)
    if not links:
        return []
    where = f"{super_url} at {commit}"
    urls = _urls_by_path(sources, repo, gitmodules, where)
    out = []
    for path, pinned in links:
        check_path(path, where)
        if path not in urls:
            raise BadInput(f"{where}: submodule {path!r} has no URL in .gitmodules")
        out.append(Submodule(path, check_url(resolve_url(urls[path], super_url), where), pinned))
    return out


def _gitlinks(sources: GitSources, repo: Path, commit: str, under: str | None) -> list[tuple[str, str]]:
    """(path, commit) of each mode-160000 entry: trees only, no blob is read."""
    args = ["ls-tree", "-r", "-z", commit, *(("--", under.strip("/")) if under else ())]
    out = []
    for entry in sources.git(repo, *args).split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[0] == "160000" and FULL_SHA.fullmatch(fields[2]):
            out.append((path, fields[2]))
    return out


def _urls_by_path(sources: GitSources, repo: Path, gitmodules: Path, where: str) -> dict[str, str]:
    """`submodule.<name>.path` -> `submodule.<name>.url` from the commit's .gitmodules."""
    if not gitmodules.is_file():
        raise BadInput(f"{where}: the tree records submodules but has no .gitmodules")
    try:
        text = sources.git(repo, "config", "--file", str(gitmodules), "-z", "--get-regexp", r"^submodule\..*\.(path|url)$")
    except GitError as exc:
        raise BadInput(f"{where}: .gitmodules is not readable: {exc}") from None
    paths: dict[str, str] = {}
    urls: dict[str, str] = {}
    for item in filter(None, text.split("\0")):
        key, _, value = item.partition("\n")
        name, _, field = key[len("submodule."):].rpartition(".")
        (paths if field == "path" else urls)[name] = value
    return {path.strip("/"): urls[name] for name, path in paths.items() if name in urls}


def check_path(path: str, where: str) -> str:
    """A submodule path that stays inside the work folder."""
    parts = PurePosixPath(path).parts
    if (not path or path.startswith(("/", "-")) or "\\" in path or any(p in ("..", ".") for p in parts)
            or any(p.lower() == ".git" for p in parts)):
        raise BadInput(f"{where}: submodule path {path!r} would leave the work folder; refusing it")
    return path


def resolve_url(url: str, super_url: str) -> str:
    """A relative submodule URL (`./x`, `../x`) resolved against the superproject's, as git does."""
    if not url.startswith(("./", "../")):
        return url
    parts = urlsplit(super_url)
    joined = posixpath.normpath(posixpath.join(parts.path.rstrip("/"), url))
    return urlunsplit(parts._replace(path=joined))


def check_url(url: str, where: str) -> str:
    """An allowed transport, and nothing git could read as an option or a command."""
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if url.startswith("-") or any(c in url for c in "\0\n\r") or "::" in url.split("/", 1)[0]:
        raise BadInput(f"{where}: submodule URL {url!r} is refused (an option or a transport helper)")
    if scheme in ALLOWED_SCHEMES or (not scheme and _SCP_LIKE.match(url)):
        return url
    raise BadInput(f"{where}: submodule URL {url!r} is refused: only {', '.join(ALLOWED_SCHEMES)} "
                   "URLs (or user@host:path) are fetched")
