"""Server-sent events from timestamped network reads, parsed after the run, not during it.

The benchmark's hot loop only stores (arrival time, bytes) per read; splitting into events here,
later, keeps per-chunk cost out of the measurement. An event inherits the arrival time of the read
that completed it, which is when the client could first have seen it.

Follows the WHATWG event-stream rules that servers actually exercise: LF, CRLF or CR line ends,
`:` comment lines (keep-alives), multi-line `data:`, an optional space after the colon, `event:`
names, and a final event without its blank line when the server closes the stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    time: float
    data: str
    event: str = "message"


def _field(line: bytes) -> tuple[bytes, bytes]:
    name, sep, value = line.partition(b":")
    if sep and value.startswith(b" "):
        value = value[1:]
    return name, value


def parse_events(reads: Iterable[tuple[float, bytes]]) -> Iterator[Event]:
    """Yield the events in a stream given as (arrival time, bytes) reads, in order."""
    buffer = b""
    data: list[bytes] = []
    name = b""
    t = 0.0
    for t, chunk in reads:
        buffer += chunk
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
            if buffer.endswith(b"\r"):  # a CRLF split across reads: wait for the LF
                buffer, carry = buffer[:-1], b"\r"
            else:
                carry = b""
            buffer = buffer.replace(b"\r", b"\n") + carry
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if not line:
                if data:
                    yield Event(t, b"\n".join(data).decode("utf-8", "replace"), (name or b"message").decode())
                data, name = [], b""
                continue
            if line.startswith(b":"):
                continue
            key, value = _field(line)
            if key == b"data":
                data.append(value)
            elif key == b"event":
                name = value
    if buffer.rstrip(b"\r") and not buffer.startswith(b":"):
        key, value = _field(buffer.rstrip(b"\r"))
        if key == b"data":
            data.append(value)
    if data:
        yield Event(t, b"\n".join(data).decode("utf-8", "replace"), (name or b"message").decode())
