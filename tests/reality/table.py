"""The committed prediction = reality table (docs/abi-reality.md), rendered from comparisons."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.reality.compare import Comparison
from tests.reality.harness import find_wheel
from tests.reality.pairs import Pair


def declared_allows(pair: Pair) -> str:
    """Does the consumer wheel's own Requires-Dist allow this provider version? ("yes"/"no (spec)")."""
    wheel = find_wheel(pair.consumer, pair.consumer_version)
    if wheel is None:
        return "?"
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(name).decode(errors="replace")
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        try:
            req = Requirement(line.split(":", 1)[1].strip())
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != canonicalize_name(pair.provider) or (req.marker and "extra" in str(req.marker)):
            continue
        spec = str(req.specifier) or "any"
        ok = req.specifier.contains(Version(pair.provider_version), prereleases=True)
        return f"yes ({spec})" if ok else f"**no** ({spec})"
    return "yes (no pin)"


def _outcome(items: dict[str, tuple[str, str]] | dict[str, set[tuple[str, str]]]) -> str:
    if not items:
        return "loads"
    parts = []
    for obj in sorted(items):
        value = items[obj]
        entries = sorted(value) if isinstance(value, set) else [value]
        shown = ", ".join(f"{kind} `{item}`" for kind, item in entries[:2])
        more = f" (+{len(entries) - 2} more)" if len(entries) > 2 else ""
        parts.append(f"`{obj}`: {shown}{more}")
    return "<br>".join(parts)


def render(comparisons: list[Comparison], header: str) -> str:
    lines = [header.rstrip(), "",
             "| consumer | torch | consumer's pin allows it | reality (ld.so in the container) | prediction (envbuilder) | equal |",
             "|---|---|---|---|---|---|"]
    for c in comparisons:
        p = c.reality.pair
        lines.append(
            f"| {p.consumer} {p.consumer_version} | {p.provider_version} ({p.why}) | {declared_allows(p)} | "
            f"{_outcome(c.real)} | {_outcome(c.predicted)} | {'yes' if c.matches else '**NO**'} |")
    lines += ["", "Where the consumer's libraries resolved (loads that worked), and the loader's messages verbatim:", ""]
    for c in comparisons:
        p = c.reality.pair
        lines.append(f"- **{p.consumer} {p.consumer_version} + torch {p.provider_version}**"
                     f"{' (CI)' if p.ci else ''} [{c.reality.report.get('runner', 'docker')}]:")
        for load in c.reality.report["loads"]:
            if load.get("skipped"):
                continue
            if load.get("ok"):
                from_provider = sorted({f"{name} → `{_short(path)}`" for name, path in (load.get("resolved") or {}).items()
                                        if path and "site-packages/" in path and not _own(path, load["file"])})
                lines.append(f"  - `{load['file']}` loads" + (f"; {', '.join(from_provider)}" if from_provider else ""))
            else:
                blocked = f" (blocked: `{load['blocked_by']}` failed first)" if load.get("blocked_by") else ""
                lines.append(f"  - `{load['file']}`{blocked}: `{_short(load.get('error', ''))}`")
    return "\n".join(lines) + "\n"


def _short(path: str) -> str:
    """Site-packages-relative: the venv's location in the container says nothing."""
    return re.sub(r"\S*/site-packages/", "", path)


def _own(path: str, rel: str) -> bool:
    return _short(path).split("/")[0].split(".")[0] == rel.split("/")[0].split(".")[0]


def write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
