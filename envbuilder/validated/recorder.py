"""Turn a finished smoke run into a record and write it beside its report.

Why a failed run records nothing unless asked: the folder is where people look for what works; a
known-bad result is still evidence, so `--record-failure` keeps it, marked `failed`. A partial run
(interrupted, a level missing) is recorded as failed at best, never passed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from envbuilder import __version__
from envbuilder.errors import BadInput
from envbuilder.smoke.report import Report
from envbuilder.validated import store
from envbuilder.validated.figures import figures, is_partial, workload
from envbuilder.validated.model import HostFingerprint, ImageRef, Record, ReportRef, ServerRef
from envbuilder.validated.provenance import LockIdentity


@dataclass(frozen=True)
class RecordRequest:
    """What `--record` was told and found out before the run: where, which lock, image, host, server."""

    directory: Path
    lock: LockIdentity
    host: HostFingerprint
    server: ServerRef
    image: ImageRef | None = None
    record_failure: bool = False


def report_bytes(report: Report) -> bytes:
    return (report.model_dump_json(by_alias=True, indent=2) + "\n").encode("utf-8")


def _date(created: str) -> str:
    try:
        when = dt.datetime.fromisoformat(created)
    except ValueError:
        when = dt.datetime.now(dt.timezone.utc)
    when = when.astimezone(dt.timezone.utc) if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def make_record(report: Report, data: bytes, request: RecordRequest) -> Record:
    if not report.target:
        raise BadInput("--record needs a target (smoke --target NAME): records live beside its matrix")
    passed = report.passed and not is_partial(report)
    reasons = tuple(line[:300].replace("\n", " ") for line in report.verdict[:100])
    if not passed and not reasons:
        reasons = ("the run was partial: not every concurrency level finished",)
    return Record(
        target=report.target, kind="run", verdict="passed" if passed else "failed", date=_date(report.created),
        tool_version=report.tool.get("version", __version__)[:300], lock_digest=request.lock.digest,
        lock_source=request.lock.source, image=request.image, host=request.host, server=request.server,
        workload=workload(report), levels=figures(report), reasons=reasons,
        report=ReportRef(sha256=hashlib.sha256(data).hexdigest(), size=len(data)),
    )


def record_run(report: Report, request: RecordRequest) -> Path | None:
    """Write the record (and its report) if the run passed, or failed with `record_failure`; else None."""
    data = report_bytes(report)
    record = make_record(report, data, request)
    if record.verdict == "failed" and not request.record_failure:
        return None
    return store.write_record(request.directory, record, data)


def server_ref(kind: str | None, command: str | None, model: str | None,
               environ: Mapping[str, str] | None = None) -> ServerRef:
    from envbuilder.validated.provenance import model_identity

    revision, weights = model_identity(model, environ) if model else (None, ())
    return ServerRef(kind=kind, command=command, model=model[:300] if model else None,
                     model_revision=revision, weights=weights)
