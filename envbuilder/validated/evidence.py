"""A target's evidence, checked, and the questions gate and doctor ask of it.

"Is this lock validated?" means: some record names this lock digest, is a passing run, and its
report re-verifies. Imported claims, failed runs, partial runs and records whose report is missing
or altered are shown, never counted. The matrix's free-text `validated:` entries are shown as
prose: they name no report, so they are unverifiable by construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from envbuilder.validated import store
from envbuilder.validated.check import Checked, check


@dataclass(frozen=True)
class Evidence:
    target: str
    checked: tuple[Checked, ...] = ()
    prose: tuple[str, ...] = field(default=())  # the matrix's `validated:` entries, as text

    def for_lock(self, digest: str | None) -> list[Checked]:
        return [c for c in self.checked if digest and c.record and c.record.lock_digest == digest]

    def passing(self, digest: str | None) -> list[Checked]:
        """Verified passing runs of this lock, newest first."""
        found = [c for c in self.for_lock(digest) if c.counts]
        return sorted(found, key=lambda c: c.record.date, reverse=True)

    def failed(self, digest: str | None) -> list[Checked]:
        return [c for c in self.for_lock(digest) if c.status == "failed-run"]

    @property
    def imported(self) -> list[Checked]:
        return [c for c in self.checked if c.status == "imported"]

    @property
    def problems(self) -> list[Checked]:
        return [c for c in self.checked if c.problem]


def prose_entries(target) -> tuple[str, ...]:
    entries = getattr(target, "validated", ()) or () if target is not None else ()
    return tuple(f"{e.date}: {e.result} ({e.by})" for e in entries)


def gather(root: Path, target_name: str, target=None) -> Evidence:
    """Check every record of `target_name` under `root/matrices/`; `target` adds its prose entries."""
    checked = tuple(check(s) for s in store.load_target(root, target_name))
    return Evidence(target_name, checked, prose_entries(target))
