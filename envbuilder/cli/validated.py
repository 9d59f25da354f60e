"""`envbuilder validated verify|import`: re-check the evidence, or enter a result that has no report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click

from envbuilder.console import make_console
from envbuilder.errors import BadInput, CheckFailed

_STYLE = {"verified": "green", "failed-run": "yellow", "imported": "dim", "no-report": "red", "mismatch": "bold red",
          "broken": "bold red"}


@click.group("validated")
def validated() -> None:
    """Validated records: smoke runs kept as evidence under matrices/TARGET.validated/."""


def _targets(root: Path, names: tuple[str, ...]) -> list[str]:
    from envbuilder.validated.store import SUFFIX

    found = sorted(p.name.removesuffix(SUFFIX) for p in (root / "matrices").glob(f"*{SUFFIX}") if p.is_dir())
    unknown = [n for n in names if n not in found]
    if unknown:
        raise BadInput(f"no records for target(s) {', '.join(map(repr, unknown))} (folders: {', '.join(found) or 'none'})")
    return list(names) or found


@validated.command("verify")
@click.argument("targets", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="one object per record: file, status, detail, figures")
def verify_cmd(targets: tuple[str, ...], as_json: bool) -> None:
    """Re-read each record's report: present, same sha256, same figures. Exit 1 on any that does not check out."""
    from envbuilder.matrix import project_root
    from envbuilder.validated.check import MEANING
    from envbuilder.validated.evidence import gather

    root = project_root()
    rows = []
    for name in _targets(root, targets):
        for c in gather(root, name).checked:
            r = c.record
            rows.append({"target": name, "file": c.stored.name, "status": c.status, "meaning": MEANING[c.status],
                         "detail": c.detail, "lock_digest": r.lock_digest if r else None,
                         "host": r.host.describe() if r else None, "headline": r.headline() if r else None})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    else:
        console = make_console(soft_wrap=True)
        for row in rows:
            console.print(f"[{_STYLE[row['status']]}]{row['status']:10}[/] {row['target']}/{row['file']}")
            if row["headline"]:
                console.print(f"           {row['headline']}; lock {(row['lock_digest'] or 'none')[:19]}; "
                              f"{row['host']}", markup=False)
            if row["detail"]:
                console.print(f"           {row['detail']}", markup=False)
        counts = {s: sum(1 for r in rows if r["status"] == s) for s in MEANING}
        console.print(", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no records")
    bad = [r for r in rows if r["status"] in ("no-report", "mismatch", "broken")]
    if bad:
        raise CheckFailed(f"{len(bad)} record(s) do not check out: {', '.join(r['file'] for r in bad)}")


def _lock_digest(value: str | None) -> str | None:
    if value is None:
        return None
    if re.fullmatch(r"sha256:[0-9a-f]{64}", value):
        return value
    from envbuilder.lock import read_lock

    path = Path(value)
    if not path.is_file():
        raise BadInput(f"option --lock: {value!r} is neither a sha256:<64 hex> digest nor a lock file")
    return read_lock(path).digest


@validated.command("import")
@click.argument("target")
@click.option("--date", required=True, help="when it ran: YYYY-MM, YYYY-MM-DD or an ISO time")
@click.option("--result", required=True, help="what was measured, in words")
@click.option("--by", required=True, help="who ran it, where")
@click.option("--lock", "lock", help="the lock it ran from: a digest or a lock file (unknown: leave out)")
@click.option("--concurrency", type=int, help="the level the figures were measured at")
@click.option("--total-tok-s", type=float)
@click.option("--output-tok-s", type=float)
@click.option("--gpu-model")
@click.option("--gpu-count", type=int)
@click.option("--driver")
def import_cmd(target: str, date: str, result: str, by: str, lock: str | None, concurrency: int | None,
               total_tok_s: float | None, output_tok_s: float | None, gpu_model: str | None,
               gpu_count: int | None, driver: str | None) -> None:
    """Enter an earlier result with no report as "imported, unverifiable": shown by gate and doctor, never counted."""
    from pydantic import ValidationError

    from envbuilder.matrix import load_target, project_root
    from envbuilder.validated.importer import Claim, import_claim
    from envbuilder.validated.model import HostFingerprint

    t = load_target(target)
    try:
        host = HostFingerprint(gpu_model=gpu_model, gpu_count=gpu_count, driver=driver)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise BadInput(f"option --{str(first['loc'][0]).replace('_', '-')}: {first['msg']}") from None
    claim = Claim(target=t.name, date=date, result=result, by=by, lock_digest=_lock_digest(lock),
                  concurrency=concurrency, total_tok_s=total_tok_s, output_tok_s=output_tok_s, host=host)
    path = import_claim(project_root(), claim)
    make_console(soft_wrap=True).print(f"imported (unverifiable, never counted as validated): {path}", markup=False)


COMMANDS = [validated]
