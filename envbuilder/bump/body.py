"""The pull request body a bump writes: what moved, the commits in between, the gate's verdict.

Commit subjects come from the upstream repository and are untrusted: each is escaped so that
nothing in it becomes a link, an @mention, an issue reference or HTML in a GitHub PR. The gate's
section is the gate's own Markdown renderer (one view of one result), its headings moved down.
"""

from __future__ import annotations

import re

from envbuilder.bump.model import BumpResult, Move
from envbuilder.gate.render import ICON, render_markdown
from envbuilder.quoting import markdown_code, markdown_text

_GITHUB = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?(?:\.git)?/?")


def _commit_ref(url: str | None, commit: str) -> str:
    """A commit id, linked when the repository is on GitHub (its web page shows the full diff)."""
    if url and _GITHUB.fullmatch(url):
        return f"[`{commit[:12]}`]({url.removesuffix('/').removesuffix('.git')}/commit/{commit})"
    return f"`{commit[:12]}`"


def _moved(move: Move, result: BumpResult) -> list[str]:
    if move.kind == "git":
        line = f"- `{move.package}` (git {markdown_code(move.url)}): {_commit_ref(move.url, move.old or '')} → " \
               f"{_commit_ref(move.url, move.new or '')}"
        line += f" (head of branch {markdown_code(move.branch)})" if move.branch else ""
        lines = [line]
        if result.old_locked != result.new_locked:
            lines.append(f"- locked version: {markdown_text(result.old_locked)} → {markdown_text(result.new_locked)}")
    else:
        lines = [f"- `{move.package}` (index): {markdown_text(result.old_locked or '(not locked)')} → "
                 f"{markdown_text(result.new_locked)}"]
        if move.new and move.new != result.new_locked:
            lines.append(f"- the index's newest version within the matrix's constraint is {markdown_text(move.new)}; "
                         "other requirements hold the lock lower")
    if move.edit is not None:
        lines.append(f"- matrix: {markdown_code(move.edit.file.name)} line {move.edit.line}, "
                     f"{markdown_code('.'.join(move.edit.keys))}: {markdown_code(move.edit.old)} → "
                     f"{markdown_code(move.edit.new)}")
    if move.fix:
        lines.append(f"- contains the required fix {_commit_ref(move.url, move.fix)} ({markdown_text(move.fix_ref)})")
    return lines + [f"- note: {markdown_text(n, 1000)}" for n in move.notes]


def _commits(move: Move) -> list[str]:
    if move.kind != "git":
        return []
    lines = [f"### Commits ({move.total_commits})", ""]
    lines += [f"- {_commit_ref(move.url, c.commit)} {markdown_text(c.subject)}" for c in move.commits]
    if move.total_commits > len(move.commits):
        lines.append(f"- … and {move.total_commits - len(move.commits)} older commit(s)")
    if not move.total_commits:
        lines.append("No commits: the new commit does not descend from the old one (a move back or to another line).")
    return lines + [""]


def _metadata(move: Move) -> list[str]:
    if move.metadata is None:
        return []
    return (["### The source's metadata vs the matrix's `metadata:` override", "",
             "The override wins at lock time; the source at the new commit declares:", ""]
            + [f"- {line}" for line in move.metadata.lines(markdown_text, markdown_code)] + [""])


def _gate(result: BumpResult) -> list[str]:
    if result.gate is None:
        return []
    text = render_markdown(result.gate)
    text = re.sub(r"^(#{2,5}) ", lambda m: "#" + m.group(1) + " ", text, flags=re.M)
    return [text.rstrip(), ""]


def render_body(result: BumpResult) -> str:
    move = result.move
    verdict = result.gate.verdict if result.gate else "not run"
    title = f"## envbuilder bump: `{move.package}` in `{result.target}` ({ICON.get(verdict, '')} gate {verdict})"
    lines = [title, "", "### What moved", "", *_moved(move, result), "", *_commits(move), *_metadata(move),
             *_gate(result)]
    if result.gate is not None and result.gate.exit_code:
        lines += ["**The gate rejected this bump: do not merge it as is.** The findings above say why.", ""]
    lines.append("Written by `envbuilder bump`; re-run it to refresh this description.")
    return "\n".join(lines).rstrip() + "\n"
