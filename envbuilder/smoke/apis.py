"""The three request shapes the benchmark speaks, and how to read each one's stream chunks.

Servers differ in what they accept and send: `ignore_eos` and `stream_options` are extensions some
reject with 422 (transformers serve), usage arrives in the finish chunk or in a separate chunk with
empty `choices`, and SGLang's native /generate streams the *cumulative* text with token counts in
`meta_info`. Each adapter turns a parsed JSON chunk into a uniform `Piece`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from envbuilder.smoke.profile import SmokeProfile


@dataclass(frozen=True, slots=True)
class Piece:
    """What one stream chunk contributed."""

    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None  # usage so far (cumulative) when the server reports it
    error: str | None = None


class Api(Protocol):
    path: str
    optional_fields: tuple[str, ...]

    def body(self, prompt: str, model: str, profile: SmokeProfile, max_tokens: int,
             dropped: frozenset[str]) -> dict[str, Any]: ...

    def reader(self) -> ChunkReader: ...


class ChunkReader(Protocol):
    def __call__(self, chunk: dict[str, Any]) -> Piece: ...


class ChunkShapeError(ValueError):
    """A JSON chunk whose fields have the wrong types (`choices` a string, `text` a number...)."""


def _count(value: Any) -> int | None:
    """A token count as servers send it: a non-negative int (not a bool, not "12"); anything else: unknown."""
    return value if type(value) is int and 0 <= value < 1 << 40 else None


def _shaped(value: Any, kind: type, what: str) -> Any:
    if value is not None and not isinstance(value, kind):
        raise ChunkShapeError(f"{what} is {type(value).__name__}, not {kind.__name__}")
    return value


def _usage(chunk: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = chunk.get("usage")
    if not isinstance(usage, dict):
        return None, None
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def _finish(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _error(chunk: dict[str, Any]) -> str | None:
    err = chunk.get("error")
    if err is None and chunk.get("object") == "error":
        err = chunk.get("message", chunk)
    if err is None:
        return None
    return str(err.get("message", err)) if isinstance(err, dict) else str(err)


def _openai_body(profile: SmokeProfile, model: str, max_tokens: int, dropped: frozenset[str]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": profile.temperature,
                            "stream": True}
    if profile.ignore_eos and "ignore_eos" not in dropped:
        body["ignore_eos"] = True
    if profile.stream_usage and "stream_options" not in dropped:
        body["stream_options"] = {"include_usage": True}
    return {**body, **profile.extra_body}


class _OpenAIReader:
    """Reads choices[0] text (or delta content) plus usage, from either the finish or a usage chunk."""

    def __init__(self, chat: bool) -> None:
        self.chat = chat

    def __call__(self, chunk: dict[str, Any]) -> Piece:
        if (err := _error(chunk)) is not None:
            return Piece(error=err)
        prompt, completion = _usage(chunk)
        choices = _shaped(chunk.get("choices"), list, "choices") or []
        if not choices:
            return Piece(prompt_tokens=prompt, completion_tokens=completion)
        choice = _shaped(choices[0], dict, "choices[0]") or {}
        if self.chat:
            delta = _shaped(choice.get("delta"), dict, "choices[0].delta") or {}
            # Reasoning models (GLM-5 with a reasoning parser) stream thoughts as reasoning_content.
            text = ((_shaped(delta.get("content"), str, "delta.content") or "")
                    + (_shaped(delta.get("reasoning_content"), str, "delta.reasoning_content") or ""))
        else:
            text = _shaped(choice.get("text"), str, "choices[0].text") or ""
        return Piece(text=text, finish_reason=_finish(choice.get("finish_reason")),
                     prompt_tokens=prompt, completion_tokens=completion)


class Completions:
    path = "/v1/completions"
    optional_fields = ("ignore_eos", "stream_options")

    def body(self, prompt, model, profile, max_tokens, dropped):
        return {"prompt": prompt, **_openai_body(profile, model, max_tokens, dropped)}

    def reader(self) -> ChunkReader:
        return _OpenAIReader(chat=False)


class Chat:
    path = "/v1/chat/completions"
    optional_fields = ("ignore_eos", "stream_options")

    def body(self, prompt, model, profile, max_tokens, dropped):
        return {"messages": [{"role": "user", "content": prompt}],
                **_openai_body(profile, model, max_tokens, dropped)}

    def reader(self) -> ChunkReader:
        return _OpenAIReader(chat=True)


class _GenerateReader:
    """SGLang /generate streams the whole text so far; the delta is what is new since the last chunk."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, chunk: dict[str, Any]) -> Piece:
        if (err := _error(chunk)) is not None:
            return Piece(error=err)
        text = _shaped(chunk.get("text"), str, "text") or ""
        delta, self.seen = text[self.seen:], max(self.seen, len(text))
        meta = _shaped(chunk.get("meta_info"), dict, "meta_info") or {}
        finish = meta.get("finish_reason")
        if isinstance(finish, dict):
            finish = finish.get("type")
        return Piece(text=delta, finish_reason=_finish(finish), prompt_tokens=_count(meta.get("prompt_tokens")),
                     completion_tokens=_count(meta.get("completion_tokens")))


class Generate:
    path = "/generate"
    optional_fields = ("ignore_eos",)

    def body(self, prompt, model, profile, max_tokens, dropped):
        params: dict[str, Any] = {"max_new_tokens": max_tokens, "temperature": profile.temperature}
        if profile.ignore_eos and "ignore_eos" not in dropped:
            params["ignore_eos"] = True
        return {"text": prompt, "sampling_params": params, "stream": True, **profile.extra_body}

    def reader(self) -> ChunkReader:
        return _GenerateReader()


APIS: dict[str, Api] = {"completions": Completions(), "chat": Chat(), "generate": Generate()}
