"""The lock as a pip requirements file with `--hash` lines (read by pip and uv).

Hashes are the whole point: `--require-hashes` makes the installer refuse any file whose bytes the
lock did not record, from whatever index the user's pip or uv is configured with, so the file
carries no index URL. Git sources become `name @ git+URL@COMMIT` (a full commit is the content
address). A source build lists its sdist's hash and a comment with its recipe, because a
requirements file cannot carry the build environment.
"""

from __future__ import annotations

from envbuilder.export import environment
from envbuilder.export.selection import Entry, Selection
from envbuilder.quoting import requirements_text, shell_word, single_line

INDENT = "    "


def _git_url(entry: Entry) -> str:
    source = entry.package.source
    url = f"git+{source.git}@{source.commit}"
    if source.subdirectory:
        url += f"#subdirectory={source.subdirectory}"
    return url


def _requirement(entry: Entry) -> str:
    head = f"{entry.name} @ {_git_url(entry)}" if entry.is_git else entry.pin
    if entry.package.marker:
        head += f" ; {entry.package.marker}"
    return requirements_text(head)


def _build_comment(entry: Entry) -> list[str]:
    build = entry.package.build
    assert build is not None
    settings = [f"#   {single_line(key)}={shell_word(value)}" for key, value in sorted(build.env.items())]
    if build.cuda:
        settings.append(f"#   CUDA toolkit {build.cuda}")
    origin = "git checkout" if entry.is_git else "sdist"
    head = (f"# {entry.name}: built from its {origin} by the installer (envbuilder recipe "
            f"{build.inputs_digest or 'unrecorded'})")
    return [head + ("; set for the build:" if settings else ""), *settings]


def _block(entry: Entry) -> list[str]:
    lines = _build_comment(entry) if entry.is_source_build else []
    if entry.is_git:
        return [*lines, "# git source: pinned by commit; pip and uv refuse VCS lines under --require-hashes",
                _requirement(entry)]
    hashes = [f"{INDENT}--hash=sha256:{a.sha256}" for a in entry.artifacts]
    body = [_requirement(entry), *hashes]
    return [*lines, *(line + " \\" for line in body[:-1]), body[-1]]


def header(selection: Selection, origin: str, install: list[str]) -> list[str]:
    lock = selection.lock
    lines = [
        f"# Exported by envbuilder from {origin}; do not edit (re-run `envbuilder export`).",
        f"# target: {lock.target}  lock: {lock.digest}",
        f"# environment: {environment.environment_marker(lock)}",
        *(f"# install: {command}" for command in install),
    ]
    for entry in selection.skipped:
        sdist = entry.sdist.sha256 if entry.sdist else "-"
        lines.append(f"# skipped source build: {entry.pin} (sdist sha256:{sdist}); "
                     "build it separately before installing this file")
    return [single_line(line, "requirements comment") for line in lines]


def render(selection: Selection, origin: str = "<lock>") -> str:
    install = ["pip install --require-hashes --no-deps -r FILE", "uv pip install --require-hashes -r FILE"]
    lines = header(selection, origin, install)
    for entry in selection.entries:
        lines += _block(entry)
    return "\n".join(lines) + "\n"
