"""Enter an earlier result that has no report (a number from someone's notes) as an imported record.

Why keep it at all: it is what people know, and deleting it loses the lead. Why it never counts:
nothing can re-check it. The gate and doctor show it as "imported, unverifiable".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from envbuilder import __version__
from envbuilder.errors import BadInput
from envbuilder.validated import store
from envbuilder.validated.model import HostFingerprint, LevelFigures, Record


@dataclass(frozen=True)
class Claim:
    target: str
    date: str
    result: str
    by: str
    lock_digest: str | None = None
    concurrency: int | None = None
    total_tok_s: float | None = None
    output_tok_s: float | None = None
    host: HostFingerprint = HostFingerprint()


def imported_record(claim: Claim) -> Record:
    levels = ()
    if claim.concurrency is not None and (claim.total_tok_s is not None or claim.output_tok_s is not None):
        levels = ({"concurrency": claim.concurrency, "total_tok_s": claim.total_tok_s,
                   "output_tok_s": claim.output_tok_s},)
    elif claim.total_tok_s is not None or claim.output_tok_s is not None:
        raise BadInput("option --concurrency: a figure needs the concurrency it was measured at")
    try:
        return Record(target=claim.target, kind="imported", verdict="imported", date=claim.date,
                      tool_version=__version__, lock_digest=claim.lock_digest, host=claim.host,
                      levels=tuple(LevelFigures.model_validate(lv) for lv in levels),
                      note=f"{claim.result} (by {claim.by})")
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        key = {"note": "--result/--by"}.get(key, key.replace("_", "-"))
        raise BadInput(f"option {key!r}: {first['msg']}") from None


def import_claim(root: Path, claim: Claim) -> Path:
    record = imported_record(claim)
    return store.write_record(store.records_dir(root, claim.target), record)
