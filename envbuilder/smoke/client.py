"""The streaming HTTP client: send one request, timestamp every network read, nothing more.

Each read is stored as `(perf_counter(), bytes)`; SSE splitting and JSON decoding happen after the
level (see `records.py`), so a thousand concurrent streams cost the client one list append per
read. Plain-http endpoints (the normal case: a server beside the client) go through the lean
asyncio transport in `wire.py`; https endpoints (TLS, proxies, corporate CAs) through httpx. A 422 naming an optional extension (`ignore_eos`, `stream_options`) is retried
without it, and the session remembers, so later requests never pay for the probe again.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass, field

import httpx

from envbuilder.smoke.apis import APIS, Api
from envbuilder.smoke.profile import SmokeProfile
from envbuilder.smoke.wire import WireError, WirePool

_HEADERS = {"content-type": "application/json", "accept": "text/event-stream"}


@dataclass(slots=True)
class Exchange:
    """One request as it happened on the wire."""

    t_send: float
    reads: list[tuple[float, bytes]] = field(default_factory=list)
    t_end: float = 0.0
    status: int | None = None
    error_kind: str | None = None  # transport-level failure: connect, timeout, protocol, http
    error: str | None = None
    body_text: str = ""  # the response body when the status was not 200


class Session:
    """An HTTP/1.1 connection pool plus what the server has taught us about its request schema."""

    def __init__(self, base_url: str, profile: SmokeProfile, model: str, *, max_connections: int) -> None:
        self.profile = profile
        self.model = model
        self.api: Api = APIS[profile.api]
        self.dropped: set[str] = set()
        url = httpx.URL(base_url)
        self.path_prefix = url.path.rstrip("/")
        self.pool: WirePool | None = None
        self.client: httpx.AsyncClient | None = None
        if url.scheme == "http":
            self.pool = WirePool(url.host, url.port or 80, profile.connect_timeout_s)
        else:
            timeout = httpx.Timeout(profile.request_timeout_s, connect=profile.connect_timeout_s, pool=None)
            limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
            self.client = httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits)

    async def aclose(self) -> None:
        if self.pool:
            self.pool.close()
        if self.client:
            await self.client.aclose()

    def body(self, prompt: str, max_tokens: int) -> bytes:
        data = self.api.body(prompt, self.model, self.profile, max_tokens, frozenset(self.dropped))
        return json.dumps(data, separators=(",", ":")).encode()

    async def send(self, prompt: str, max_tokens: int | None = None) -> Exchange:
        """Send one streaming request, retrying without any optional field a 422/400 rejects."""
        max_tokens = max_tokens or self.profile.max_tokens
        while True:
            exchange = await self._exchange(self.body(prompt, max_tokens))
            rejected = self._rejected_fields(exchange)
            if not rejected:
                return exchange
            self.dropped.update(rejected)

    def _rejected_fields(self, exchange: Exchange) -> set[str]:
        if exchange.status not in (400, 422):
            return set()
        remaining = [f for f in self.api.optional_fields if f not in self.dropped]
        named = {f for f in remaining if re.search(rf"\b{re.escape(f)}\b", exchange.body_text)}
        return named

    async def _exchange(self, content: bytes) -> Exchange:
        if self.pool is None:
            return await self._exchange_httpx(content)
        ex = Exchange(t_send=time.perf_counter())
        try:
            async with asyncio.timeout(self.profile.request_timeout_s):
                resp = await self.pool.post(self.path_prefix + self.api.path, content, _HEADERS)
            ex.status = resp.status
            if resp.status != 200:
                ex.body_text = b"".join(b for _, b in resp.reads).decode("utf-8", "replace")[:2000]
                ex.error_kind, ex.error = "http", f"HTTP {resp.status}: {ex.body_text[:300]}"
            else:
                ex.reads = resp.reads
        except TimeoutError:
            ex.error_kind, ex.error = "timeout", f"no complete answer within {self.profile.request_timeout_s:g} s"
        except WireError as exc:
            ex.error_kind, ex.error = exc.kind, str(exc)
        ex.t_end = time.perf_counter()
        return ex

    async def _exchange_httpx(self, content: bytes) -> Exchange:
        ex = Exchange(t_send=time.perf_counter())
        reads = ex.reads
        clock = time.perf_counter
        try:
            async with asyncio.timeout(self.profile.request_timeout_s):
                async with self.client.stream("POST", self.api.path, content=content, headers=_HEADERS) as resp:
                    ex.status = resp.status_code
                    if resp.status_code != 200:
                        ex.body_text = (await resp.aread()).decode("utf-8", "replace")[:2000]
                        ex.error_kind, ex.error = "http", f"HTTP {resp.status_code}: {ex.body_text[:300]}"
                    else:
                        async for data in resp.aiter_bytes():
                            reads.append((clock(), data))
        except TimeoutError:
            ex.error_kind, ex.error = "timeout", f"no complete answer within {self.profile.request_timeout_s:g} s"
        except httpx.TimeoutException as exc:
            ex.error_kind, ex.error = "timeout", f"{type(exc).__name__}: {exc}"
        except httpx.ConnectError as exc:
            ex.error_kind, ex.error = "connect", f"cannot connect: {exc}"
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            ex.error_kind, ex.error = "protocol", f"connection broken mid-response: {exc or type(exc).__name__}"
        except httpx.HTTPError as exc:
            ex.error_kind, ex.error = "http", f"{type(exc).__name__}: {exc}"
        ex.t_end = clock()
        return ex
