"""`envbuilder smoke`: benchmark a running OpenAI-compatible server and judge the numbers."""

from __future__ import annotations

from pathlib import Path

import click

from envbuilder.cli.record import record_options, record_request
from envbuilder.console import make_console
from envbuilder.errors import BadInput, CheckFailed, Unreachable
from envbuilder.smoke.profile import SmokeProfile


def parse_levels(value: str | None) -> list[int] | None:
    if not value:
        return None
    try:
        return [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise BadInput(f"option --concurrency: expected comma-separated integers, got {value!r}") from None


def smoke_options(func):
    """Workload and report options shared by `smoke` and `serve --smoke`."""
    options = [
        click.option("--concurrency", help="comma-separated levels, e.g. 1,8,64 (overrides the profile)"),
        click.option("--requests", "requests_per_level", type=int, help="requests per level"),
        click.option("--repeats", type=int, help="runs per level (noise-aware baselines need >1)"),
        click.option("--request-rate", type=float, help="Poisson arrivals in req/s, capped by the concurrency"),
        click.option("--api", type=click.Choice(["completions", "chat", "generate"])),
        click.option("--prompt-tokens", type=int),
        click.option("--max-tokens", type=int),
        click.option("--warmup", "warmup_requests", type=int),
        click.option("--request-timeout", "request_timeout_s", type=float,
                     help="seconds one request may take, all of it [profile's request_timeout_s, 600]"),
        click.option("--level-deadline", "level_deadline_s", type=float,
                     help="seconds each concurrency level may take; past it the report keeps the finished levels, "
                          "marked partial"),
        click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="write the JSON report"),
        click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), help="write the HTML report"),
        click.option("--baseline", type=click.Path(dir_okay=False, path_type=Path), help="earlier JSON report to compare with"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def profile_overrides(kw: dict) -> dict:
    return {"concurrency": parse_levels(kw["concurrency"]), "requests_per_level": kw["requests_per_level"],
            "repeats": kw["repeats"], "request_rate": kw["request_rate"], "api": kw["api"],
            "prompt_tokens": kw["prompt_tokens"], "max_tokens": kw["max_tokens"],
            "warmup_requests": kw["warmup_requests"], "request_timeout_s": kw["request_timeout_s"]}


def target_profile(t) -> tuple[SmokeProfile, list]:
    """The target's smoke profile with its gates computed from its evidence, and that evidence's figures."""
    from envbuilder.matrix import project_root
    from envbuilder.smoke.gates import for_target, validated_figures

    if t.smoke is None:
        raise BadInput(f"{t.source_path}: target {t.name!r} has no `smoke:` block")
    root = project_root()
    return for_target(t.smoke, t, root), validated_figures(root, t)


def run_and_report(endpoint, profile: SmokeProfile, *, target: str | None, baseline: Path | None,
                   json_path: Path | None, html_path: Path | None, facts=None, server_kind=None,
                   record=None, level_deadline_s: float | None = None, figures=None) -> None:
    """Run one smoke, show progress and the summary, write the reports, raise CheckFailed on a fail.

    `record` (a RecordRequest from envbuilder.cli.record) keeps the finished run as validated evidence.
    """
    from envbuilder.smoke.console import RichProgress, print_summary
    from envbuilder.smoke.html import write_html
    from envbuilder.smoke.report import write_report
    from envbuilder.smoke.runner import LevelDeadline
    from envbuilder.smoke.service import SmokeInterrupted, run_smoke, unready_report

    console = make_console(stderr=True)

    def write(report) -> None:
        if json_path:
            write_report(report, json_path)
            console.print(f"wrote {json_path}")
        if html_path:
            write_html(report, html_path)
            console.print(f"wrote {html_path}")

    try:
        with RichProgress(console) as progress:
            report = run_smoke(endpoint, profile, target=target, baseline=baseline, facts=facts,
                               progress=progress, server_kind=server_kind, level_deadline_s=level_deadline_s,
                               figures=figures)
    except Unreachable as exc:
        write(unready_report(endpoint, profile, target, str(exc)))
        raise
    except SmokeInterrupted as cut:
        # what was measured is kept: the finished levels, marked partial (never a pass, never evidence)
        print_summary(_summary_console(), cut.report)
        write(cut.report)
        console.print(f"[yellow]partial[/] report: {cut.report.partial_reason}")
        if isinstance(cut.cause, LevelDeadline):
            raise CheckFailed(f"smoke failed: {cut.cause}") from None
        if isinstance(cut.cause, OSError):
            raise Unreachable(f"smoke stopped: {cut.cause}") from None
        raise cut.cause from None
    print_summary(_summary_console(), report)
    write(report)
    if record is not None:
        from envbuilder.cli.record import write_record

        write_record(record, report)
    if not report.passed:
        raise CheckFailed(f"smoke failed: {len(report.verdict)} reason(s), listed above")


def _positive(value: float | None, option: str = "--level-deadline") -> float | None:
    if value is not None and not (0 < value < float("inf")):
        raise BadInput(f"option {option}: {value!r} must be a positive number of seconds")
    return value


def _summary_console():
    from envbuilder.console import make_console

    out = make_console()
    return out if out.is_terminal else make_console(width=140)  # logs and CI: keep the table's numbers whole


@click.command("smoke")
@click.option("--endpoint", required=True, help="server base URL, e.g. http://127.0.0.1:30000")
@click.option("--target", help="take the smoke (and readiness) profile from this target's matrix")
@click.option("--model", help="request `model` (default: the profile's, else the first of /v1/models)")
@click.option("--ready-timeout", type=float, default=60.0, show_default=True, help="seconds to wait for ready")
@smoke_options
@record_options
def smoke_cmd(endpoint: str, target: str | None, model: str | None, ready_timeout: float, **kw) -> None:
    """Benchmark a running server: warmup, concurrency sweep, metrics, thresholds, reports."""
    from envbuilder.smoke.service import Endpoint, with_overrides

    if not endpoint.startswith(("http://", "https://")):
        raise BadInput(f"option --endpoint: {endpoint!r} needs a scheme, e.g. http://127.0.0.1:30000")
    profile, ready, models, info, figures = SmokeProfile(), "/health", "/v1/models", None, None
    if target:
        from envbuilder.matrix import load_target

        t = load_target(target)
        profile, figures = target_profile(t)
        if t.serve is not None:
            ready, models, info = t.serve.ready_path, t.serve.models_path, t.serve.info_path
            model = model or t.serve.served_model_name
        target = t.name
    profile = with_overrides(profile, **profile_overrides(kw))
    ep = Endpoint(base_url=endpoint.rstrip("/"), ready_path=ready, models_path=models, info_path=info,
                  ready_timeout_s=ready_timeout, model=model)
    from envbuilder.validated.recorder import server_ref

    record = record_request(kw, target=target, endpoint=endpoint,
                            server=server_ref(None, None, None))  # a server it did not start: command unknown
    run_and_report(ep, profile, target=target, baseline=kw["baseline"], json_path=kw["json_path"],
                   html_path=kw["html_path"], record=record, level_deadline_s=_positive(kw["level_deadline_s"]),
                   figures=figures)


COMMANDS = [smoke_cmd]
