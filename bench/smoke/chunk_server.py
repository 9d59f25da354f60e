"""A local OpenAI-style server that streams pre-made completion chunks as fast as it can.

Usage: python chunk_server.py PORT [--tokens N]
Every POST gets N one-token chunks (each its own write, yielding to the loop between them, so they
leave as separate segments like a real server's), a usage chunk and `data: [DONE]`; max_tokens in
the body overrides N. GET /health and /v1/models answer at once. No framework: the point is that
the server costs far less per chunk than the client under test.
"""

import asyncio
import json
import os
import re
import sys

CHUNK = b'data: {"id":"c","object":"text_completion","model":"bench","choices":[{"index":0,"text":" tok","finish_reason":null}]}\n\n'
MODELS = json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode()


def chunked(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


FRAME = chunked(CHUNK)


def tail(n: int, prompt_tokens: int) -> bytes:
    usage = {"choices": [{"index": 0, "text": "", "finish_reason": "length"}],
             "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": n + prompt_tokens}}
    return chunked(b"data: " + json.dumps(usage).encode() + b"\n\n") + chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n"


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, default_tokens: int) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?i)content-length:\s*(\d+)", head)
            body = await reader.readexactly(int(length.group(1))) if length else b""
            if head.startswith(b"GET"):
                payload = MODELS if b"/v1/models" in head.split(b"\r\n")[0] else b'{"status":"ok"}'
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                             % (len(payload), payload))
                continue
            match = re.search(rb'"max_tokens":\s*(\d+)', body)
            n = int(match.group(1)) if match else default_tokens
            prompt_tokens = len(body.split(b" "))
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
            for _ in range(n):
                writer.write(FRAME)
                await writer.drain()
                await asyncio.sleep(0)
            writer.write(tail(n, prompt_tokens))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port: int, tokens: int) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, tokens), "127.0.0.1", port, backlog=4096)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    if hasattr(os, "sched_setaffinity") and os.environ.get("BENCH_SERVER_CPU"):
        os.sched_setaffinity(0, {int(os.environ["BENCH_SERVER_CPU"])})
    tokens = int(sys.argv[sys.argv.index("--tokens") + 1]) if "--tokens" in sys.argv else 256
    asyncio.run(main(int(sys.argv[1]), tokens))
