"""The lean HTTP/1.1 transport's framing, fed byte-exact responses split at every possible point."""

import asyncio

import pytest

from envbuilder.smoke.wire import WireError, _Connection

BODY = [b"data: a\n\n", b"data: " + b"x" * 300 + b"\n\n", b"data: [DONE]\n\n"]
CHUNKED = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\ncontent-type: text/event-stream\r\n\r\n"
           + b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in BODY) + b"0\r\nX-Trailer: 1\r\n\r\n")
LENGTH = b"HTTP/1.1 422 Unprocessable\r\nContent-Length: 11\r\n\r\nhello world"


def feed(raw: bytes, cuts: list[int]) -> _Connection:
    async def run():
        conn = _Connection()
        bounds = [0, *cuts, len(raw)]
        for a, b in zip(bounds, bounds[1:]):
            conn.data_received(raw[a:b])
        return conn

    return asyncio.run(run())


@pytest.mark.parametrize("raw, body, status", [(CHUNKED, b"".join(BODY), 200), (LENGTH, b"hello world", 422)])
def test_every_split_point_decodes_the_same(raw, body, status):
    for cut in range(1, len(raw)):
        for cuts in ([cut], [cut, min(cut + 3, len(raw) - 1)]):
            conn = feed(raw, sorted(set(cuts)))
            assert conn.done.done() and conn.done.exception() is None, cuts
            assert conn.status == status and b"".join(p for _, p in conn.reads) == body, cuts
            assert conn.keep_alive


def test_bad_chunk_size_is_a_protocol_error():
    conn = feed(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", [])
    with pytest.raises(WireError, match="bad chunked encoding"):
        conn.done.result()


def test_connection_lost_mid_body_fails_the_response():
    async def run():
        conn = _Connection()
        conn.data_received(CHUNKED[:120])
        conn.connection_lost(None)
        return conn

    conn = asyncio.run(run())
    with pytest.raises(WireError, match="mid-response"):
        conn.done.result()
