"""Turn a wire-level exchange into a request result: content times, token counts, or a failure.

A request succeeds only if the stream finished properly: a `finish_reason` or `[DONE]` arrived,
no chunk carried an error, every data line was JSON, and some content came. Everything else is a
counted failure with a reason, and never enters the latency statistics.

Token counts come from the server (usage) when it reports them; otherwise they are estimated
(one token per content chunk) and the result says so. When a chunk carries several tokens, the
per-chunk counts are exact if the server streams cumulative usage, else the reported total is
spread over the chunks in proportion to their text length (estimated, and flagged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from envbuilder.smoke.apis import Api, ChunkShapeError
from envbuilder.smoke.client import Exchange
from envbuilder.smoke.sse import parse_events


@dataclass(slots=True)
class RequestResult:
    ok: bool
    t_send: float
    t_end: float
    error_kind: str | None = None
    error: str | None = None
    content_times: list[float] = field(default_factory=list)
    chunk_tokens: list[float] = field(default_factory=list)  # tokens carried by each content chunk
    output_tokens: int = 0
    prompt_tokens: int | None = None
    tokens_reported: bool = False  # output_tokens came from the server's usage
    chunk_tokens_exact: bool = False
    finish_reason: str | None = None

    @property
    def ttft(self) -> float:
        return self.content_times[0] - self.t_send

    @property
    def e2e(self) -> float:
        return self.t_end - self.t_send

    @property
    def tpot(self) -> float | None:
        """(e2e - ttft) / (output tokens - 1); undefined for a single token."""
        return (self.e2e - self.ttft) / (self.output_tokens - 1) if self.output_tokens > 1 else None


def _fail(ex: Exchange, kind: str, message: str) -> RequestResult:
    return RequestResult(ok=False, t_send=ex.t_send, t_end=ex.t_end, error_kind=kind, error=message)


def _spread(total: int, texts: list[str]) -> list[float]:
    chars = sum(len(t) for t in texts) or 1
    return [total * len(t) / chars for t in texts]


def to_result(ex: Exchange, api: Api) -> RequestResult:
    if ex.error_kind:
        return _fail(ex, ex.error_kind, ex.error or ex.error_kind)
    read = api.reader()
    times: list[float] = []
    texts: list[str] = []
    cumulative: list[int | None] = []
    prompt = completion = finish = None
    done = False
    for event in parse_events(ex.reads):
        if event.event == "error":
            return _fail(ex, "stream-error", f"server sent an error event: {event.data[:300]}")
        if event.data.strip() == "[DONE]":
            done = True
            continue
        try:
            chunk = json.loads(event.data)
        except ValueError:
            return _fail(ex, "malformed", f"stream chunk is not JSON: {event.data[:120]!r}")
        if not isinstance(chunk, dict):
            return _fail(ex, "malformed", f"stream chunk is not a JSON object: {event.data[:120]!r}")
        try:
            piece = read(chunk)
        except ChunkShapeError as exc:
            return _fail(ex, "malformed", f"stream chunk has the wrong shape ({exc}): {event.data[:120]!r}")
        if piece.error is not None:
            return _fail(ex, "stream-error", f"server reported an error mid-stream: {piece.error[:300]}")
        prompt = piece.prompt_tokens if piece.prompt_tokens is not None else prompt
        completion = piece.completion_tokens if piece.completion_tokens is not None else completion
        finish = piece.finish_reason or finish
        if piece.text:
            times.append(event.time)
            texts.append(piece.text)
            cumulative.append(piece.completion_tokens)
    if not (done or finish):
        return _fail(ex, "truncated", f"stream ended before the response finished ({len(texts)} content chunks)")
    if not texts:
        return _fail(ex, "empty", "stream finished without any content")
    result = RequestResult(ok=True, t_send=ex.t_send, t_end=ex.t_end, content_times=times,
                           prompt_tokens=prompt, finish_reason=finish)
    _count_tokens(result, texts, cumulative, completion)
    return result


def _count_tokens(result: RequestResult, texts: list[str], cumulative: list[int | None],
                  completion: int | None) -> None:
    if completion is None:
        result.output_tokens, result.chunk_tokens = len(texts), [1.0] * len(texts)
        return
    result.output_tokens, result.tokens_reported = int(completion), True
    if all(c is not None for c in cumulative):
        previous, counts = 0, []
        for c in cumulative:
            counts.append(float(max(c - previous, 1)))
            previous = c
        result.chunk_tokens, result.chunk_tokens_exact = counts, True
    elif completion == len(texts):
        result.chunk_tokens, result.chunk_tokens_exact = [1.0] * len(texts), True
    else:
        result.chunk_tokens = _spread(int(completion), texts)
