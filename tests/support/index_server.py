"""A real simple-API index on 127.0.0.1 (random port) for hermetic tests.

It serves PEP 691 JSON and PEP 503 HTML project pages, files with HTTP range support, and
PEP 658/714 `.metadata` files; every behaviour a client must cope with can be switched:

    server = IndexServer().start()          # or the `index_server` fixture
    server.add(make_wheel("demo", "1.0"), requires_python=">=3.9", yanked="broken")
    server.url                              # "http://127.0.0.1:PORT/simple" (give it to IndexClient)
    server.pep658 = False                   # no .metadata files, no core-metadata in pages
    server.ranges = False                   # ignore Range headers (answer 200 with the whole file)
    server.range_status = 416               # refuse every Range request with this status
    server.formats = ("html",)              # only PEP 503 HTML ("json" alone: only JSON)
    server.drop_connections(3)              # close the next 3 connections without an answer
    server.drop_connections(None)           # ... every connection, forever
    server.fail_with(503, 2)                # answer 503 twice, then normally
    server.tamper("demo-1.0-py3-none-any.whl")  # serve bytes that do not match the published hash
    server.log                              # [Request(method, path, status, range, accept, bytes_sent)]
    server.bytes_sent("demo-1.0-py3-none-any.whl")  # body bytes sent for paths ending in that

Names are normalised as PyPI does: /simple/Foo_Bar/ redirects to /simple/foo-bar/.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote

from packaging.utils import canonicalize_name

from tests.support.dists import BuiltDist

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_TYPE = "application/vnd.pypi.simple.v1+html"
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    status: int
    range: str | None
    accept: str | None
    bytes_sent: int


@dataclass
class Served:
    dist: BuiltDist
    requires_python: str | None = None
    yanked: str | bool | None = None
    upload_time: str | None = "2024-01-01T00:00:00.000000Z"

    @property
    def metadata_sha256(self) -> str:
        return hashlib.sha256(self.dist.metadata).hexdigest()


@dataclass(repr=False)
class IndexServer:
    pep658: bool = True
    ranges: bool = True
    formats: tuple[str, ...] = ("json", "html")
    publish_size: bool = True
    range_status: int | None = None
    projects: dict[str, list[Served]] = field(default_factory=dict)
    log: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._drops: int | None = 0  # None = drop forever
        self._fail: tuple[int, int] = (0, 0)
        self._tampered: set[str] = set()
        self._httpd: ThreadingHTTPServer | None = None

    def __repr__(self) -> str:
        where = self.url if self._httpd is not None else "not started"
        return f"IndexServer({where}, {len(self.projects)} projects, {len(self.log)} requests logged)"

    # -- setup ----------------------------------------------------------------------
    def add(self, dist: BuiltDist, *, project: str | None = None, requires_python: str | None = None,
            yanked: str | bool | None = None, upload_time: str | None = "2024-01-01T00:00:00.000000Z") -> Served:
        name = canonicalize_name(project or dist.filename.split("-")[0])
        served = Served(dist, requires_python, yanked, upload_time)
        with self._lock:
            self.projects.setdefault(name, []).append(served)
        return served

    def drop_connections(self, times: int | None) -> None:
        with self._lock:
            self._drops = times

    def fail_with(self, status: int, times: int) -> None:
        with self._lock:
            self._fail = (status, times)

    def tamper(self, filename: str) -> None:
        self._tampered.add(filename)

    def start(self) -> IndexServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},  # fast stop()
                         name="test-index", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> IndexServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses and log ----------------------------------------------------------
    @property
    def root(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return f"{self.root}/simple"

    def file_url(self, filename: str) -> str:
        return f"{self.root}/files/{filename}"

    def requests(self, path_suffix: str = "") -> list[Request]:
        with self._lock:
            return [r for r in self.log if r.path.endswith(path_suffix)]

    def bytes_sent(self, path_suffix: str) -> int:
        return sum(r.bytes_sent for r in self.requests(path_suffix))

    def clear_log(self) -> None:
        with self._lock:
            self.log.clear()

    # -- behaviour switches used by the handler ------------------------------------
    def _take_drop(self) -> bool:
        with self._lock:
            if self._drops is None:
                return True
            if self._drops > 0:
                self._drops -= 1
                return True
            return False

    def _take_failure(self) -> int | None:
        with self._lock:
            status, times = self._fail
            if times > 0:
                self._fail = (status, times - 1)
                return status
            return None

    def _record(self, request: Request) -> None:
        with self._lock:
            self.log.append(request)

    def _replace(self, old: Request, new: Request) -> None:
        with self._lock:
            self.log[self.log.index(old)] = new

    def _find(self, filename: str) -> Served | None:
        with self._lock:
            for files in self.projects.values():
                for served in files:
                    if served.dist.filename == filename:
                        return served
        return None

    # -- pages ----------------------------------------------------------------------
    def json_page(self, name: str) -> bytes:
        files = []
        for s in self.projects.get(name, []):
            entry: dict[str, object] = {
                "filename": s.dist.filename,
                "url": f"../../files/{s.dist.filename}",
                "hashes": {"sha256": s.dist.sha256},
                "requires-python": s.requires_python,
                "yanked": s.yanked if s.yanked else False,
                "upload-time": s.upload_time,
            }
            if self.publish_size:
                entry["size"] = s.dist.size
            if self.pep658:
                entry["core-metadata"] = entry["dist-info-metadata"] = {"sha256": s.metadata_sha256}
            files.append(entry)
        versions = sorted({s.dist.filename.split("-")[1].removesuffix(".tar.gz").removesuffix(".zip")
                           for s in self.projects.get(name, [])})
        page = {"meta": {"api-version": "1.1"}, "name": name, "files": files, "versions": versions}
        return json.dumps(page).encode()

    def html_page(self, name: str) -> bytes:
        links = []
        for s in self.projects.get(name, []):
            attrs = [f'href="../../files/{s.dist.filename}#sha256={s.dist.sha256}"']
            if s.requires_python:
                attrs.append(f'data-requires-python="{html.escape(s.requires_python)}"')
            if s.yanked:
                attrs.append(f'data-yanked="{html.escape(s.yanked if isinstance(s.yanked, str) else "")}"')
            if self.pep658:
                attrs += [f'data-core-metadata="sha256={s.metadata_sha256}"',
                          f'data-dist-info-metadata="sha256={s.metadata_sha256}"']
            links.append(f"<a {' '.join(attrs)}>{html.escape(s.dist.filename)}</a><br/>")
        body = f"<!DOCTYPE html><html><head><meta name=\"pypi:repository-version\" content=\"1.1\">" \
               f"<title>Links for {name}</title></head><body><h1>Links for {name}</h1>{''.join(links)}</body></html>"
        return body.encode()


def _handler_for(server: IndexServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real indexes

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet tests
            pass

        def do_HEAD(self) -> None:
            self._serve(head=True)

        def do_GET(self) -> None:
            self._serve(head=False)

        # -- plumbing ---------------------------------------------------------------
        def _send(self, status: int, body: bytes, content_type: str = "text/plain", head: bool = False,
                  headers: dict[str, str] | None = None) -> None:
            # logged before the client can see the answer, so a test never races the log
            entry = Request(self.command, self.path, status, self.headers.get("Range"),
                            self.headers.get("Accept"), 0 if head else len(body))
            server._record(entry)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if not head:
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True
                    server._replace(entry, dataclasses.replace(entry, bytes_sent=0))

        def _serve(self, head: bool) -> None:
            if server._take_drop():
                server._record(Request(self.command, self.path, 0, self.headers.get("Range"),
                                       self.headers.get("Accept"), 0))
                self.close_connection = True  # no status line at all: the client sees a dropped connection
                return
            status = server._take_failure()
            if status is not None:
                self._send(status, b"induced failure", head=head)
                return
            path = unquote(self.path.split("?")[0])
            if path.startswith("/simple/"):
                self._page(path.removeprefix("/simple/").strip("/"), head)
            elif path.startswith("/files/"):
                self._file(path.removeprefix("/files/"), head)
            else:
                self._send(404, b"not found", head=head)

        def _page(self, name: str, head: bool) -> None:
            normal = canonicalize_name(name)
            if name != normal:
                self._send(301, b"", head=head, headers={"Location": f"/simple/{normal}/"})
                return
            if normal not in server.projects:
                self._send(404, b"no such project", head=head)
                return
            accept = self.headers.get("Accept", "")
            if "json" in server.formats and (JSON_TYPE in accept or "html" not in server.formats):
                self._send(200, server.json_page(normal), JSON_TYPE, head)
            else:
                html_type = HTML_TYPE if HTML_TYPE in accept else "text/html"
                self._send(200, server.html_page(normal), f"{html_type}; charset=utf-8", head)

        def _file(self, filename: str, head: bool) -> None:
            want_metadata = filename.endswith(".metadata")
            served = server._find(filename.removesuffix(".metadata") if want_metadata else filename)
            if served is None or (want_metadata and not server.pep658):
                self._send(404, b"not found", head=head)
                return
            if want_metadata:
                self._send(200, served.dist.metadata, "application/octet-stream", head)
                return
            data = served.dist.data
            if filename in server._tampered:
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            spec = self.headers.get("Range")
            if spec and server.range_status is not None:
                self._send(server.range_status, b"", head=head)
            elif spec and server.ranges:
                self._range(data, spec, head)
            else:
                self._send(200, data, "application/octet-stream", head, {"Accept-Ranges": "bytes"}
                           if server.ranges else None)

        def _range(self, data: bytes, spec: str, head: bool) -> None:
            match = _RANGE.match(spec.strip())
            size = len(data)
            if not match or match.groups() == ("", ""):
                self._send(416, b"", head=head, headers={"Content-Range": f"bytes */{size}"})
                return
            first, last = match.groups()
            if first == "":
                start, end = max(0, size - int(last)), size - 1
            else:
                start, end = int(first), min(size - 1, int(last) if last else size - 1)
            if start >= size or start > end:
                self._send(416, b"", head=head, headers={"Content-Range": f"bytes */{size}"})
                return
            self._send(206, data[start:end + 1], "application/octet-stream", head,
                       {"Content-Range": f"bytes {start}-{end}/{size}", "Accept-Ranges": "bytes"})

    return Handler
