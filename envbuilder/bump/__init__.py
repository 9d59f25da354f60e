"""`envbuilder bump TARGET PACKAGE`: move a git source along a branch (or to a commit, or to the newest
commit holding a fix) or an index package to its newest allowed version; re-lock; gate; write a PR body.

    from envbuilder.bump import BumpRequest, bump
    result = bump(BumpRequest("blackwell-sm120-main", "sglang", branch="main"), root)
    result.move            # what moved (old -> new, commits, metadata difference)
    result.gate.verdict    # pass / warn / reject; result.exit_code is 1 on reject
"""

from envbuilder.bump.model import BumpRequest, BumpResult, MetadataDifference, Move
from envbuilder.bump.service import bump, plan

__all__ = ["BumpRequest", "BumpResult", "MetadataDifference", "Move", "bump", "plan"]
