"""The values `envbuilder bump` passes between its steps: what was asked, what moves, what came out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from envbuilder.bump.yamledit import ScalarEdit
from envbuilder.gate.model import GateResult
from envbuilder.index.githistory import LoggedCommit


@dataclass(frozen=True)
class BumpRequest:
    """The command line: at most one of branch/commit (git) or version (index)."""

    target: str
    package: str
    branch: str | None = None
    commit: str | None = None
    require_fix: str | None = None
    version: str | None = None
    dry_run: bool = False
    offline: bool = False
    body_file: Path | None = None


@dataclass(frozen=True)
class MetadataDifference:
    """How a git source's own metadata differs from the matrix's `metadata:` override at the new commit."""

    only_in_source: tuple[str, ...] = ()
    only_in_override: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()  # "version: source 0.6.0, override 0.5.9" and the like
    unreadable: str | None = None  # why the source's metadata could not be read

    @property
    def same(self) -> bool:
        return not (self.only_in_source or self.only_in_override or self.fields or self.unreadable)

    def lines(self, text: Callable[[str], str] = str, code: Callable[[str], str] = str) -> list[str]:
        """One line per difference; `text` quotes prose, `code` a requirement (for Markdown: escaped / code span)."""
        if self.unreadable:
            return [f"the source's own metadata could not be read: {text(self.unreadable)}"]
        if self.same:
            return ["the source declares the same requirements as the override (requires_dist could be dropped)"]
        return ([text(f) for f in self.fields] + [f"source adds: {code(r)}" for r in self.only_in_source]
                + [f"override only: {code(r)}" for r in self.only_in_override])


@dataclass(frozen=True)
class Move:
    """What moves: a git source's commit (old/new revs) or an index package's version."""

    package: str
    kind: Literal["git", "index"]
    old: str | None
    new: str | None  # index without --version: the newest the index offers within the matrix's constraint
    edit: ScalarEdit | None = None  # None: the matrix allows the new version already; only the lock moves
    url: str | None = None
    branch: str | None = None
    fix: str | None = None  # the fix commit the new commit contains (--require-fix)
    fix_ref: str | None = None  # as given: a PR URL or a commit id
    commits: tuple[LoggedCommit, ...] = ()
    total_commits: int = 0
    metadata: MetadataDifference | None = None
    notes: tuple[str, ...] = ()

    @property
    def moves(self) -> bool:
        return self.kind == "index" or self.old != self.new


@dataclass(frozen=True)
class BumpResult:
    """What happened: the move, the locked versions before and after, the gate's verdict, the body file."""

    target: str
    move: Move
    old_locked: str | None = None
    new_locked: str | None = None
    gate: GateResult | None = None
    body_file: Path | None = None
    wrote: bool = False

    @property
    def exit_code(self) -> int:
        return self.gate.exit_code if self.gate is not None else 0
