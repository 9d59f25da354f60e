"""SSE splitting and chunk interpretation: the server differences the client must survive."""

import json

from envbuilder.smoke.apis import APIS
from envbuilder.smoke.client import Exchange
from envbuilder.smoke.records import to_result
from envbuilder.smoke.sse import parse_events


def sse(*payloads, done=True):
    body = "".join(f"data: {json.dumps(p)}\n\n" for p in payloads)
    return body + ("data: [DONE]\n\n" if done else "")


def comp(text, finish=None, usage=None):
    chunk = {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}
    if usage:
        chunk["usage"] = usage
    return chunk


def exchange(raw: str, splits=1) -> Exchange:
    data = raw.encode()
    step = max(1, len(data) // splits)
    reads = [(float(i), data[i * step:(i + 1) * step if i < splits - 1 else None]) for i in range(splits)]
    return Exchange(t_send=-1.0, reads=reads, t_end=float(splits), status=200)


def test_events_survive_arbitrary_read_boundaries_crlf_and_comments():
    raw = ": keep-alive\r\n\r\ndata: a\r\ndata: b\r\n\r\nevent: error\r\ndata: boom\r\n\r\ndata: tail"
    for cut in range(1, len(raw)):
        reads = [(0.0, raw[:cut].encode()), (1.0, raw[cut:].encode())]
        got = [(e.event, e.data) for e in parse_events(reads)]
        assert got == [("message", "a\nb"), ("error", "boom"), ("message", "tail")], cut


def test_event_time_is_the_read_that_completed_it():
    reads = [(1.0, b"data: x"), (2.0, b"\n\ndata: y\n\n")]
    assert [(e.time, e.data) for e in parse_events(reads)] == [(2.0, "x"), (2.0, "y")]


def test_usage_in_finish_chunk_without_done():
    r = to_result(exchange(sse(comp("a"), comp("b"), comp("c", "length", {"prompt_tokens": 7, "completion_tokens": 3}),
                               done=False), splits=3), APIS["completions"])
    assert r.ok and r.output_tokens == 3 and r.prompt_tokens == 7 and r.tokens_reported and r.chunk_tokens_exact


def test_separate_usage_chunk_and_multi_token_chunks_spread_by_text():
    usage = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 6}}
    r = to_result(exchange(sse(comp("ab"), comp("abcd", "length"), usage)), APIS["completions"])
    assert r.ok and r.output_tokens == 6 and not r.chunk_tokens_exact
    assert r.chunk_tokens == [2.0, 4.0]


def test_no_usage_means_estimated_counts():
    r = to_result(exchange(sse(comp("a"), comp("b", "length"))), APIS["completions"])
    assert r.ok and r.output_tokens == 2 and not r.tokens_reported


def test_chat_counts_reasoning_content_and_ignores_role_only_chunk():
    chunks = [{"choices": [{"delta": {"role": "assistant"}}]},
              {"choices": [{"delta": {"reasoning_content": "think"}}]},
              {"choices": [{"delta": {"content": "hi"}, "finish_reason": "stop"}]}]
    r = to_result(exchange(sse(*chunks), splits=3), APIS["chat"])
    assert r.ok and len(r.content_times) == 2


def test_generate_cumulative_text_and_token_counts():
    chunks = [{"text": "a", "meta_info": {"completion_tokens": 1, "prompt_tokens": 4}},
              {"text": "abc", "meta_info": {"completion_tokens": 3}},
              {"text": "abcd", "meta_info": {"completion_tokens": 4, "finish_reason": {"type": "length"}}}]
    r = to_result(exchange(sse(*chunks), splits=3), APIS["generate"])
    assert r.ok and r.chunk_tokens == [1.0, 2.0, 1.0] and r.chunk_tokens_exact and r.output_tokens == 4


def test_failures_are_named():
    api = APIS["completions"]
    assert to_result(exchange(sse(comp("a"), done=False)), api).error_kind == "truncated"
    assert to_result(exchange("data: {nope\n\n"), api).error_kind == "malformed"
    assert to_result(exchange(sse(comp("a"), {"error": {"message": "OOM"}})), api).error_kind == "stream-error"
    assert to_result(exchange(sse(comp("", "length"))), api).error_kind == "empty"
