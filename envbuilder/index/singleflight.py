"""Run each keyed job once per process, however many threads ask for it.

A resolver fans out the same lookups from several places (torch's page is wanted by a dozen
packages); the first request starts the work, later ones share its Future. Successful results stay
memoised for the client's lifetime; failures are forgotten, so a later call tries again.

A synchronous `call` runs a job that has not started yet in the caller's own thread (even one
queued on the pool), so a pool job that calls synchronously can never deadlock waiting for a
free worker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future
from typing import Any


class _Entry:
    __slots__ = ("future", "job", "started")

    def __init__(self, job: Callable[[], Any]):
        self.future: Future[Any] = Future()
        self.job = job
        self.started = False


class SingleFlight:
    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry] = {}
        self._lock = threading.Lock()

    def _entry(self, key: Hashable, job: Callable[[], Any]) -> tuple[_Entry, bool]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry(job)
                return entry, True
            return entry, False

    def _start(self, key: Hashable, entry: _Entry) -> None:
        with self._lock:
            if entry.started:
                return
            entry.started = True
        entry.future.set_running_or_notify_cancel()
        try:
            entry.future.set_result(entry.job())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
            with self._lock:
                if self._entries.get(key) is entry:
                    del self._entries[key]
            entry.future.set_exception(exc)

    def submit(self, executor: Executor, key: Hashable, job: Callable[[], Any]) -> Future[Any]:
        """The shared Future for `key`, queueing `job` on `executor` if nobody has yet."""
        entry, new = self._entry(key, job)
        if new:
            executor.submit(self._start, key, entry)
        return entry.future

    def cancel_pending(self) -> None:
        """Fail every job that has not started (the pool is shutting down): nobody waits forever."""
        with self._lock:
            pending = [(k, e) for k, e in self._entries.items() if not e.started]
            for key, entry in pending:
                entry.started = True
                del self._entries[key]
        for _, entry in pending:
            entry.future.cancel()
            entry.future.set_running_or_notify_cancel()

    def call(self, key: Hashable, job: Callable[[], Any]) -> Any:
        """The result for `key`, running the job here unless another thread already is."""
        entry, _ = self._entry(key, job)
        self._start(key, entry)
        return entry.future.result()
