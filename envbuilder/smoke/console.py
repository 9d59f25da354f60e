"""What a person sees in the terminal: a live progress bar while the sweep runs, a summary after."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from envbuilder.smoke.report import Report


class RichProgress:
    """runner.Progress on a rich bar: one task per phase, failures shown in its description."""

    def __init__(self, console: Console) -> None:
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("[red]{task.fields[failed]}"), TimeElapsedColumn(),
                             console=console, transient=False)
        self._task = None
        self._failed = 0

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc) -> None:
        self._bar.stop()

    def start(self, label: str, total: int) -> None:
        self._failed = 0
        self._task = self._bar.add_task(label, total=total, failed="")

    def advance(self, failed: bool) -> None:
        self._failed += failed
        self._bar.update(self._task, advance=1, failed=f"{self._failed} failed" if self._failed else "")

    def finish(self) -> None:
        pass


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _mean(level, name: str) -> float | None:
    return level.summary[name].mean


def summary_table(report: Report) -> Table:
    table = Table(title=f"smoke: {report.model} via {report.api} at {report.endpoint}", title_justify="left")
    for col in ("conc.", "ok/sent", "req/s", "out tok/s", "total tok/s", "TTFT p50", "TTFT p99",
                "ITL p50", "TPOT p50", "e2e p50"):
        table.add_column(col, justify="right")
    for lv in report.levels:
        sent = sum(r.requests for r in lv.runs)
        ok = sum(r.succeeded for r in lv.runs)
        table.add_row(str(lv.concurrency), f"{ok}/{sent}", f"{_mean(lv, 'request_s'):,.2f}",
                      f"{_mean(lv, 'output_tok_s'):,.0f}", f"{_mean(lv, 'total_tok_s'):,.0f}",
                      _ms(_mean(lv, "ttft_ms_p50")), _ms(_mean(lv, "ttft_ms_p99")), _ms(_mean(lv, "itl_ms_p50")),
                      _ms(_mean(lv, "tpot_ms_p50")), _ms(_mean(lv, "e2e_ms_p50")))
    table.caption = "latencies in ms (means over repeats); formulas are in the JSON/HTML report"
    return table


def print_summary(console: Console, report: Report) -> None:
    console.print(summary_table(report))
    notes = []
    if report.workload.dropped_fields:
        notes.append(f"the server rejected {', '.join(report.workload.dropped_fields)}: sent without")
    if not report.workload.prompt_tokens_calibrated:
        notes.append("the server reports no usage: prompt length and output tokens are estimated")
    for note in notes:
        console.print(f"[yellow]note:[/] {note}")
    for t in report.thresholds:
        console.print(("[green]pass[/] " if t.passed else "[red]FAIL[/] ") + escape(t.message))
    for g in report.goals:  # the user's targets: shown, never failing
        console.print(("[green]goal[/] " if g.met else "[yellow]goal[/] ") + escape(g.message.removeprefix("goal ")))
    if report.baseline:
        worse = [c for c in report.baseline.comparisons if c.regressed]
        console.print(f"baseline {report.baseline.path}: {len(report.baseline.comparisons)} comparisons, "
                      f"{len(worse)} regressed")
    if report.passed:
        console.print("[bold green]smoke passed[/]")
    else:
        for line in report.verdict:
            console.print(f"[bold red]smoke failed:[/] {line}")
