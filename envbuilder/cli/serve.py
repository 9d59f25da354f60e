"""`envbuilder serve TARGET`: start the target's model server from its profile; optionally smoke it."""

from __future__ import annotations

import os
from pathlib import Path

import click

from envbuilder.cli.record import record_options, record_request
from envbuilder.cli.smoke import profile_overrides, run_and_report, smoke_options, target_profile
from envbuilder.console import make_console
from envbuilder.errors import BadInput


@click.command("serve")
@click.argument("target")
@click.option("--dry-run", is_flag=True, help="print the exact command and environment, start nothing")
@click.option("--smoke", "do_smoke", is_flag=True, help="once ready, run the target's smoke benchmark")
@click.option("--exit", "exit_when_done", is_flag=True, help="stop the server once ready (after --smoke)")
@click.option("--model", help="model path/id (else $ENVBUILDER_MODEL, else the profile's)")
@click.option("--binary", help="server executable (else $ENVBUILDER_SERVER_BINARY, else the kind's default)")
@click.option("--log", "log_path", type=click.Path(dir_okay=False, path_type=Path), help="server log file")
@smoke_options
@record_options
def serve_cmd(target: str, dry_run: bool, do_smoke: bool, exit_when_done: bool, model: str | None,
              binary: str | None, log_path: Path | None, **kw) -> None:
    """Start TARGET's server as a child, stream its log, wait until ready; Ctrl-C stops it cleanly."""
    from envbuilder.matrix import load_target
    from envbuilder.serve.command import build_command
    from envbuilder.serve.service import serve
    from envbuilder.smoke.service import Endpoint, with_overrides

    t = load_target(target)
    if t.serve is None:
        raise BadInput(f"{t.source_path}: target {t.name!r} has no `serve:` block")
    command = build_command(t.serve, model=model, binary=binary, environ=os.environ)
    if dry_run:
        out = make_console(soft_wrap=True)
        out.print(command.shell(), markup=False)
        out.print(f"# ready: GET {command.base_url}{t.serve.ready_path} -> 200 within "
                  f"{t.serve.startup_timeout_s:g} s; then {t.serve.models_path}", markup=False)
        return
    on_ready = None
    if kw["baseline"]:
        from envbuilder.smoke.report import read_report

        read_report(kw["baseline"])  # a bad baseline fails now, not after minutes of model loading
    if do_smoke:
        if t.smoke is None:
            raise BadInput(f"{t.source_path}: target {t.name!r} has no `smoke:` block; drop --smoke or add one")
        computed, figures = target_profile(t)
        profile = with_overrides(computed, **profile_overrides(kw))
        record = record_request(kw, target=t.name, endpoint=command.base_url, server=_server_ref(t.serve, command))

        def on_ready(facts, server) -> None:
            server.echoing.clear()
            make_console(stderr=True).print(f"server log continues in {server.log_path}")
            ep = Endpoint(base_url=command.base_url, ready_path=t.serve.ready_path, models_path=t.serve.models_path,
                          info_path=t.serve.info_path, model=t.serve.served_model_name)
            run_and_report(ep, profile, target=t.name, baseline=kw["baseline"], json_path=kw["json_path"],
                           html_path=kw["html_path"], facts=facts, server_kind=t.serve.kind, record=record,
                           level_deadline_s=kw["level_deadline_s"], figures=figures)
    elif kw["do_record"] or kw["record_failure"]:
        raise BadInput("option --record: records a smoke run; add --smoke")

    log = log_path or Path(t.serve.log_file or f"serve-{t.name}.log")
    serve(command, t.serve, log, exit_when_done=exit_when_done, on_ready=on_ready)


def _server_ref(profile, command):
    """The record's server: the exact command (secret-looking env values hidden) and the model's identity."""
    from dataclasses import replace

    from envbuilder.validated.provenance import redact
    from envbuilder.validated.recorder import server_ref

    shown = replace(command, env=redact(command.env)).shell()
    return server_ref(profile.kind, shown, command.model)


COMMANDS = [serve_cmd]
