"""`--require-fix URL-or-commit`: which commit is the fix, answered as the fix-ancestry rules answer it.

The knowledge base maps a fix's PR to the commit that merged it (`fix: {pr: ..., commit: ...}` on a
known issue, e.g. SGLang #14311 -> 632c7afa); the gate's rule then asks whether the locked commit
descends from it (`GitSources.is_ancestor`). A PR the knowledge base does not map is found by its
merge subject on the branch: GitHub writes "Title (#N)" for a squash merge and "Merge pull request
#N from ..." for a merge commit; the oldest such subject is the merge (a later revert quotes it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from envbuilder.errors import BadInput, CheckFailed
from envbuilder.index.git import FULL_SHA, GitSources
from envbuilder.index.githistory import subject_mentions
from envbuilder.knowledge import Knowledge

_PR_URL = re.compile(r"https://github\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/pull/(\d{1,9})/?")


@dataclass(frozen=True)
class FixRef:
    """The fix as given: a full commit id, or a GitHub pull request (URL and number)."""

    text: str
    commit: str | None = None
    pr: int | None = None


def parse_fix(text: str) -> FixRef:
    value = text.strip()
    if FULL_SHA.fullmatch(value.lower()):
        return FixRef(value, commit=value.lower())
    match = _PR_URL.fullmatch(value)
    if match:
        return FixRef(value.rstrip("/"), pr=int(match.group(1)))
    raise BadInput(f"--require-fix {text!r}: give a full commit id (40 hex digits) or a pull request URL "
                   "like https://github.com/OWNER/REPO/pull/NUMBER")


def from_knowledge(ref: FixRef, knowledge: Knowledge, package: str) -> str | None:
    """The merge commit the knowledge base records for this PR on this package's known issues."""
    name = canonicalize_name(package)
    for issue in knowledge.known_issues:
        fix = issue.fix
        if canonicalize_name(issue.package) == name and fix.commit and (fix.pr or "").rstrip("/") == ref.text:
            return fix.commit.lower()
    return None


def fix_commit(ref: FixRef, knowledge: Knowledge, package: str, sources: GitSources, url: str, head: str) -> str:
    """The fix's commit id: given, else from the knowledge base, else the PR's merge subject on the branch."""
    if ref.commit:
        return ref.commit
    known = from_knowledge(ref, knowledge, package)
    if known:
        return known
    merged = subject_mentions(sources, url, head, rf"\(#{ref.pr}\)\s*$|^Merge pull request #{ref.pr}\b")
    if merged:
        return merged[-1]
    raise CheckFailed(f"--require-fix {ref.text}: the knowledge base maps no commit to it, and no commit up to "
                      f"{head[:12]} of {url} has a merge subject naming #{ref.pr}: it is not on this branch "
                      "(or give its merge commit id)")
