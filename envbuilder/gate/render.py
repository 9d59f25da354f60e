"""The gate result as text (rich), JSON, Markdown (a PR comment / job summary) and GitHub
workflow annotations. Every view lists the same findings: package, rule, why, reference."""

from __future__ import annotations

import json

from rich.console import Console
from rich.table import Table

from envbuilder.gate.model import GateFinding, GateResult, TargetResult

ICON = {"pass": "✅", "warn": "⚠️", "reject": "❌"}
SEVERITY_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}
STYLE = {"pass": "green", "warn": "yellow", "reject": "bold red", "error": "red", "warning": "yellow", "info": "dim"}


def render_json(result: GateResult) -> str:
    return json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n"


def _status(finding: GateFinding) -> str:
    return "new" if finding.new else "existing"


def render_text(result: GateResult, console: Console) -> None:
    console.print(f"gate: [{STYLE[result.verdict]}]{result.verdict.upper()}[/]"
                  + (" (strict: warnings fail)" if result.strict else ""))
    for target in result.targets:
        console.print(f"\n[bold]{target.target}[/]: [{STYLE[target.verdict]}]{target.verdict}[/]  "
                      f"{target.base or '(none)'} -> {target.head or '(removed)'}")
        if target.changes:
            changes = Table("package", "change", "base", "head", "kind", box=None, pad_edge=False)
            for c in target.changes:
                changes.add_row(c.package, f"{c.kind} {c.level or ''}".strip(), c.base or "", c.head or "",
                                "binary" if c.binary else "pure-Python")
            console.print(changes)
        else:
            console.print("  no package changes")
        for f in target.findings:
            console.print(f"  [{STYLE[f.severity]}]{f.severity.upper():7}[/] {f.package}  [bold]{f.rule}[/]  ({_status(f)})")
            console.print(f"          {f.why}", markup=False)
            if f.reference:
                console.print(f"          see {f.reference}", markup=False)
        if target.validated:
            mark = "yes" if target.validated.head else "no"
            console.print(f"  validated: {mark}: {target.validated.note}", markup=False)
            for entry in target.validated.entries:
                console.print(f"    - {entry}", markup=False)


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _markdown_target(target: TargetResult) -> list[str]:
    lines = [f"### {ICON[target.verdict]} `{target.target}`: {target.verdict}", "",
             f"`{target.base or '(none)'}` → `{target.head or '(removed)'}`", ""]
    if target.changes:
        lines += ["| package | change | base | head | kind |", "|---|---|---|---|---|"]
        lines += [f"| {_cell(c.package)} | {c.kind} {c.level or ''} | {_cell(c.base)} | {_cell(c.head)} | "
                  f"{'binary' if c.binary else 'pure-Python'} |" for c in target.changes]
    else:
        lines.append("No package changes.")
    lines.append("")
    shown = [f for f in target.findings if f.severity != "info" or f.new]
    if shown:
        lines += ["| | package | rule | why | reference |", "|---|---|---|---|---|"]
        for f in shown:
            ref = f"[link]({f.reference})" if (f.reference or "").startswith("http") else _cell(f.reference)
            status = "" if f.new else " (already in base)"
            lines.append(f"| {SEVERITY_ICON[f.severity]} {f.severity}{status} | {_cell(f.package)} | `{f.rule}` | "
                         f"{_cell(f.why)} | {ref} |")
        lines.append("")
    if target.validated:
        mark = "yes" if target.validated.head else "no"
        lines.append(f"Validated on hardware: **{mark}** — {target.validated.note}.")
        lines += [f"- {_cell(e)}" for e in target.validated.entries]
        lines.append("")
    return lines


def render_markdown(result: GateResult) -> str:
    counts = result.counts
    head = (f"## envbuilder gate: {ICON[result.verdict]} {result.verdict}\n\n"
            f"{counts.get('targets', 0)} target(s), {counts.get('changes', 0)} package change(s), "
            f"{counts.get('errors', 0)} new error(s), {counts.get('warnings', 0)} new warning(s).\n")
    body = [line for target in result.targets for line in _markdown_target(target)]
    return head + "\n" + "\n".join(body).rstrip() + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(result: GateResult) -> str:
    """`::error file=...,line=...,title=...::message` lines the Actions runner turns into annotations."""
    level = {"error": "error", "warning": "warning", "info": "notice"}
    out = []
    for target in result.targets:
        for f in target.findings:
            if f.severity == "info" and not f.new:
                continue
            props = []
            if f.file and ":" not in f.file:
                props.append(f"file={_escape_property(f.file)}")
                if f.line:
                    props.append(f"line={f.line}")
            props.append(f"title={_escape_property(f'{f.rule} ({f.package})')}")
            severity = level[f.severity] if f.new or f.severity != "error" else "warning"
            suffix = "" if f.new else " [already in base]"
            ref = f" See {f.reference}" if f.reference else ""
            out.append(f"::{severity} {','.join(props)}::{_escape_data(f.why + suffix + ref)}")
    out.append(f"::notice title=envbuilder gate::verdict {result.verdict}")
    return "\n".join(out) + "\n"
