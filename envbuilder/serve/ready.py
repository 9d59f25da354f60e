"""Wait until a server can generate: poll its ready path under a deadline, then confirm its models.

SGLang answers 503 on /health_generate for the minutes GLM-5 takes to load, and a crashed server
never answers at all; so each poll also checks whether the child is still alive, and a dead child
ends the wait at once with its last log lines instead of burning the whole deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from envbuilder.errors import Unreachable
from envbuilder.serve.process import ServerProcess


@dataclass(frozen=True)
class ServerFacts:
    """What the server says about itself once ready; goes into the smoke report."""

    base_url: str
    models: tuple[str, ...]
    info: dict[str, Any] | None = None
    ready_after_s: float = 0.0
    models_raw: dict[str, Any] = field(default_factory=dict)


Progress = Callable[[float, str], None]


def _describe(exc: Exception) -> str:
    return type(exc).__name__.replace("Error", " error").strip() + (f": {exc}" if str(exc) else "")


def _crash_message(server: ServerProcess, rc: int) -> str:
    return (f"the server exited with status {rc} before it was ready; its last log lines "
            f"(full log: {server.log_path}):\n{server.quoted_tail(30)}")


def poll_ready(
    client: httpx.Client,
    ready_path: str,
    *,
    deadline_s: float,
    interval_s: float = 1.0,
    server: ServerProcess | None = None,
    progress: Progress | None = None,
    hint: str = "is the server running?",
) -> float:
    """Return seconds until `ready_path` answered 200; raise Unreachable at the deadline or a crash."""
    start = time.monotonic()
    last = "no answer yet"
    while True:
        if server is not None and (rc := server.returncode()) is not None:
            raise Unreachable(_crash_message(server, rc))
        try:
            response = client.get(ready_path)
            if response.status_code == 200:
                return time.monotonic() - start
            last = f"HTTP {response.status_code} on {ready_path}"
        except httpx.HTTPError as exc:
            last = _describe(exc)
        elapsed = time.monotonic() - start
        if progress:
            progress(elapsed, last)
        if elapsed + interval_s > deadline_s:
            tail = "" if server is None else "\nlast log lines:\n" + server.quoted_tail(15)
            raise Unreachable(f"{client.base_url} not ready after {deadline_s:.0f} s (last: {last}); {hint}{tail}")
        time.sleep(interval_s)


def _model_ids(payload: Any) -> tuple[str, ...]:
    rows = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(rows, list):
        return ()
    return tuple(str(r["id"]) for r in rows if isinstance(r, dict) and "id" in r)


def fetch_facts(client: httpx.Client, models_path: str, info_path: str | None) -> tuple[tuple[str, ...], dict, dict | None]:
    """The served model ids (required) and the server's self-description (best effort)."""
    try:
        response = client.get(models_path)
    except httpx.HTTPError as exc:
        raise Unreachable(f"{client.base_url}{models_path}: {_describe(exc)}; is the server up?") from None
    if response.status_code != 200:
        raise Unreachable(f"{client.base_url}{models_path} answered HTTP {response.status_code}: "
                          f"{response.text[:200]!r}; the server is up but not serving models")
    try:
        payload = response.json()
    except ValueError:
        raise Unreachable(f"{client.base_url}{models_path} did not answer JSON: {response.text[:200]!r}") from None
    info = None
    if info_path:
        try:
            r = client.get(info_path)
            info = r.json() if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            info = None
    return _model_ids(payload), payload, info


def wait_ready(
    base_url: str,
    *,
    ready_path: str = "/health",
    models_path: str = "/v1/models",
    info_path: str | None = None,
    deadline_s: float = 60.0,
    interval_s: float = 1.0,
    server: ServerProcess | None = None,
    progress: Progress | None = None,
    hint: str = "is the server running? (--ready-timeout waits longer)",
) -> ServerFacts:
    with httpx.Client(base_url=base_url, timeout=httpx.Timeout(10.0, connect=2.0)) as client:
        ready_after = poll_ready(client, ready_path, deadline_s=deadline_s, interval_s=interval_s,
                                 server=server, progress=progress, hint=hint)
        models, raw, info = fetch_facts(client, models_path, info_path)
    return ServerFacts(base_url=base_url, models=models, info=info, ready_after_s=ready_after, models_raw=raw)
