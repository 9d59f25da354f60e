"""Serve one target: start the server child, wait until ready, hand over, and stop it cleanly.

What happens once the server is ready is the caller's (`on_ready`: run the smoke, or nothing); this
module only guarantees the child never outlives us and its log is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from envbuilder.console import make_console
from envbuilder.errors import CheckFailed
from envbuilder.serve.command import ServeCommand
from envbuilder.serve.process import ServerProcess, forward_signals
from envbuilder.serve.profile import ServeProfile
from envbuilder.serve.ready import ServerFacts, wait_ready


def _progress(console: Console) -> Callable[[float, str], None]:
    last = [0.0]

    def report(elapsed: float, status: str) -> None:
        if elapsed - last[0] >= 10 or last[0] == 0.0:  # one line every 10 s is enough for an 8-minute load
            last[0] = elapsed or 1e-9
            console.print(f"[dim]waiting for ready: {elapsed:.0f} s ({status})[/]")

    return report


def serve(command: ServeCommand, profile: ServeProfile, log_path: Path, *, exit_when_done: bool,
          on_ready: Callable[[ServerFacts, ServerProcess], None] | None = None,
          console: Console | None = None) -> int:
    """Run the server; returns the exit status for the CLI (0 on a clean stop)."""
    console = console or make_console(stderr=True)
    server = ServerProcess(command, log_path)
    console.print(f"starting: {command.shell()}\nlog: {log_path}")
    server.start()
    received: list[int] = []
    try:
        with forward_signals(server, received):
            facts = wait_ready(command.base_url, ready_path=profile.ready_path, models_path=profile.models_path,
                               info_path=profile.info_path, deadline_s=profile.startup_timeout_s,
                               interval_s=profile.poll_interval_s, server=server, progress=_progress(console),
                               hint=f"raise the profile's startup_timeout_s if the model is still loading; "
                                    f"server log: {log_path}")
            console.print(f"[green]ready[/] after {facts.ready_after_s:.1f} s at {command.base_url}; "
                          f"models: {', '.join(facts.models) or '(none listed)'}")
            if on_ready is not None:
                on_ready(facts, server)
            if exit_when_done:
                return 0
            return _wait_for_exit(server, received, console)
    finally:
        rc = server.stop(profile.stop_timeout_s, signalled=bool(received))
        console.print(f"server stopped (status {rc}); log: {log_path}")


def _wait_for_exit(server: ServerProcess, received: list[int], console: Console) -> int:
    console.print("serving; Ctrl-C stops the server")
    try:
        while (rc := server.returncode()) is None:
            time.sleep(0.2)
    except KeyboardInterrupt:
        return 0  # the signal went to the server too; stop() below waits for it to finish
    if received:
        return 0
    raise CheckFailed(f"the server exited with status {rc}; last log lines (full log: {server.log_path}):\n"
                      f"{server.quoted_tail(20)}")
