"""Run the server as a child: tee its log to a file and the terminal, forward signals, stop cleanly.

The child gets its own session (process group) so that stopping it also stops the workers it
spawns (SGLang runs one scheduler process per GPU); signals that reach envbuilder are forwarded to
that group instead of being delivered to it behind our back.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from envbuilder.errors import Unreachable
from envbuilder.serve.command import BINARY_ENV, ServeCommand

FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class ServerProcess:
    """One server child process and the thread that copies its output."""

    def __init__(self, command: ServeCommand, log_path: Path, *, echo: bool = True, tail_lines: int = 200) -> None:
        self.command = command
        self.log_path = log_path
        self.echoing = threading.Event()  # cleared while a progress display owns the terminal
        if echo:
            self.echoing.set()
        self._tail: deque[str] = deque(maxlen=tail_lines)
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        try:
            self._proc = subprocess.Popen(
                self.command.argv,
                env={**os.environ, **self.command.env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except (FileNotFoundError, PermissionError) as exc:
            log.close()
            raise Unreachable(
                f"cannot start the server: {self.command.argv[0]!r}: {exc.strerror}; install it or point "
                f"--binary / {BINARY_ENV} at it"
            ) from None
        self._reader = threading.Thread(target=self._copy_output, args=(log,), daemon=True)
        self._reader.start()

    def _copy_output(self, log) -> None:
        assert self._proc and self._proc.stdout
        with log:
            for raw in iter(self._proc.stdout.readline, b""):
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self._tail.append(line)
                if self.echoing.is_set():
                    print(line, file=sys.stderr, flush=True)  # looked up now: rich may have redirected it

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None

    def tail(self, n: int = 30) -> list[str]:
        return list(self._tail)[-n:]

    def quoted_tail(self, n: int = 30) -> str:
        """The last log lines, indented and marked, for an error message."""
        return "\n".join(f"  | {line}" for line in self.tail(n)) or "  | (no output)"

    def send_signal(self, signum: int) -> None:
        if self._proc and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signum)

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._proc:
            return None
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, grace_s: float, *, signalled: bool = False) -> int | None:
        """SIGTERM the whole group, wait `grace_s`, then SIGKILL; returns the exit status.

        `signalled`: the user's signal already reached the group, so give it the grace period first;
        a second signal makes llama-server and vLLM skip their own clean-up and exit 1."""
        if not self._proc:
            return None
        if signalled and self._proc.poll() is None:
            self.wait(grace_s)
        if self._proc.poll() is None:
            self.send_signal(signal.SIGTERM)
            if self.wait(grace_s) is None:
                self.send_signal(signal.SIGKILL)
                self._proc.wait()
        # Workers that outlive the leader still hold the pipe open: finish them too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        if self._reader:
            self._reader.join(timeout=5)
        return self._proc.returncode


@contextlib.contextmanager
def forward_signals(server: ServerProcess, received: list[int]) -> Iterator[list[int]]:
    """While inside, SIGINT/SIGTERM/SIGHUP go to the server group, then interrupt us (KeyboardInterrupt)
    so whatever we were doing (waiting, benchmarking) unwinds to the code that stops the server.
    Each signal is appended to `received`, which outlives the block for that code to read."""

    def handler(signum, _frame) -> None:
        received.append(signum)
        server.send_signal(signum)
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, handler) for s in FORWARDED_SIGNALS}
    try:
        yield received
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
