"""Prediction (envbuilder's linker over the wheels' linkage summaries) against reality (what ld.so
said in the clean container), per pair.

Both sides are reduced to outcomes: for every object the loader could not finish, the kind
(missing-library / undefined-symbol / symbol-version) and the library or mangled symbol. They
match when the same objects fail and, for each, the thing the loader named is among the things
the prediction names for that object: ld.so reports only the first undefined symbol of a file,
the prediction lists all of them. A pair that loads must have no prediction finding (no false
rejects), and a pair that fails must have one (no false accepts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from envbuilder.abi.link import LinkFinding, LinkReport
from envbuilder.abi.linkcheck import check_wheels

from tests.reality.harness import Reality, installed_wheels

LINK_KINDS = ("missing-library", "undefined-symbol", "symbol-version")
NEEDED_BY = re.compile(r"\(needed by (?P<obj>[^)\s]+)\)")
MANIFEST = "debian-12-slim"  # generated from the container's base image, debian:bookworm-slim


def _needed_by(finding: LinkFinding) -> str:
    explicit = getattr(finding, "needed_by", None)
    if explicit:
        return explicit
    m = NEEDED_BY.search(finding.message)
    return m["obj"] if m else (finding.file or "")


def _item(finding: LinkFinding) -> str:
    if finding.kind == "undefined-symbol":
        return finding.symbol or ""
    if finding.kind == "symbol-version":
        return finding.symbol_version or ""
    return finding.library or ""


def predicted_failures(report: LinkReport, consumer: str) -> dict[str, set[tuple[str, str]]]:
    """object -> {(kind, library or mangled symbol)} the prediction names for the consumer."""
    out: dict[str, set[tuple[str, str]]] = {}
    for finding in report.for_package(consumer):
        if finding.kind in LINK_KINDS:
            obj = _needed_by(finding) if finding.kind == "missing-library" else (finding.file or "")
            out.setdefault(obj, set()).add((finding.kind, _item(finding)))
    return out


def real_failures(reality: Reality) -> dict[str, tuple[str, str]]:
    """object -> (kind, library or mangled symbol) the loader named."""
    return {obj: (kind, item) for obj, kind, item in sorted(reality.failures())}


@dataclass
class Comparison:
    reality: Reality
    predicted: dict[str, set[tuple[str, str]]]
    real: dict[str, tuple[str, str]]
    report: LinkReport

    @property
    def matches(self) -> bool:
        if set(self.predicted) != set(self.real):
            return False
        return all(self.real[obj] in self.predicted[obj] for obj in self.real)

    def mismatch(self) -> str:
        lines = []
        for obj in sorted(set(self.predicted) | set(self.real)):
            real = self.real.get(obj)
            pred = sorted(self.predicted.get(obj, ()))
            if real is None or real not in pred:
                lines.append(f"{obj}: reality {real or 'loads'}; prediction {pred or 'loads'}")
        return "\n".join(lines)


def predict(reality: Reality, wheels: list[Path] | None = None) -> LinkReport:
    """envbuilder's verdict on exactly the wheels the container installed for this pair."""
    python = ".".join(reality.report["python"].split(".")[:2])
    return check_wheels(wheels or installed_wheels(reality), manifest=MANIFEST, python=python,
                        only=[reality.pair.consumer])


def compare(reality: Reality) -> Comparison:
    report = predict(reality)
    predicted = predicted_failures(report, reality.pair.consumer)
    for obj in reality.blocked():
        predicted.pop(obj, None)
    return Comparison(reality, predicted, real_failures(reality), report)
