"""Doctor's `validated` line: has the lock it checks passed a smoke run on hardware like this host's?

Three answers: "validated on this hardware" (a verified passing record whose fingerprint matches
this host), "validated elsewhere" (passing records, none from hardware like this), "never
validated". Imported claims and the matrix's prose are mentioned, never counted.
"""

from __future__ import annotations

from envbuilder.doctor.model import Check, HostFacts
from envbuilder.validated import fingerprint
from envbuilder.validated.evidence import Evidence


def _fix(target: str) -> str:
    return f"run `envbuilder serve {target} --smoke --record` here (in the image) to record this host's run"


def validated_check(evidence: Evidence, lock_digest: str | None, host: HostFacts, machine: str | None,
                    live: bool) -> Check:
    needed = "a verified passing smoke record for this lock on this hardware"
    if lock_digest is None:
        return Check(id="validated", status="warn", found="no lock to look up (run `envbuilder lock` first)",
                     needed=needed)
    here = fingerprint.from_facts(host, machine if live else None)
    passing = evidence.passing(lock_digest)
    unverifiable = len(evidence.imported) + len(evidence.prose)
    aside = f"; {unverifiable} imported/prose claim(s), unverifiable, not counted" if unverifiable else ""
    lock = lock_digest[:19]
    if not passing:
        failed = evidence.failed(lock_digest)
        also = f"; {len(failed)} recorded FAILED run(s)" if failed else ""
        return Check(id="validated", status="warn", found=f"never validated: no verified passing record for lock "
                                                          f"{lock}{also}{aside}", needed=needed, fix=_fix(evidence.target))
    compared = [(c, fingerprint.compare(c.record.host, here)) for c in passing]
    same = [c for c, m in compared if m.match == "same"]
    if same:
        best = same[0].record
        return Check(id="validated", status="pass", needed=needed,
                     found=f"validated on this hardware: {len(same)} passing record(s) for lock {lock}, latest "
                           f"{best.date}: {best.headline()} on {best.host.describe()}")
    driver_only = [(c, m) for c, m in compared if m.match == "same-hardware"]
    if driver_only:
        c, m = driver_only[0]
        return Check(id="validated", status="warn", needed=needed,
                     found=f"validated on this hardware with another driver: {c.record.headline()} "
                           f"({'; '.join(m.differences)})",
                     fix="re-run the recorded smoke with this driver, or use the recorded one")
    c, m = compared[0]
    return Check(id="validated", status="warn", needed=needed,
                 found=f"validated elsewhere: {len(passing)} passing record(s) for lock {lock}, none on hardware like "
                       f"this; latest on {c.record.host.describe()} ({'; '.join(m.differences[:3])})",
                 fix=_fix(evidence.target))
