"""Fetch one locked file from a simple-API index by name and sha256, and nothing else.

Copied into build stages as a standalone script (stdlib only). `pip download` cannot fetch an sdist
without preparing its metadata, which installs and may compile its whole build backend; a stage
that compiles a binary from the sdist needs only the bytes the lock names.

    python3 fetch.py SOURCE_JSON DEST_DIR     (PIP_INDEX_URL from the environment, else pip's default)

The index URL comes from a BuildKit secret exported for this RUN only; its credentials (if any)
are sent as basic auth to the index's own host and never printed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import netrc
import os
import re
import sys
import urllib.parse
import urllib.request
from html.parser import HTMLParser

JSON_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data):
        if self._href is not None:
            self.links.append((data.strip(), self._href))
            self._href = None


def default_index() -> str:
    from pip._internal.models.index import PyPI  # the build venv's pip names its own default

    return PyPI.simple_url


_INDEX_AUTH: dict[str, str] = {}  # scheme://host:port -> Authorization header, from the index URL


def split_credentials(index: str) -> str:
    """The index URL without user:password; they are kept for requests to that host only."""
    parts = urllib.parse.urlsplit(index)
    if "@" not in parts.netloc:
        return index
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}".encode()
    _INDEX_AUTH[f"{parts.scheme}://{hostport.lower()}"] = "Basic " + base64.b64encode(token).decode()
    return urllib.parse.urlunsplit(parts._replace(netloc=hostport))


def _open(url: str, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    """GET `url`; basic auth from the index URL goes to that host only (an unredirected header is
    not copied onto a redirect to another host), else ~/.netrc (mounted as a BuildKit secret) answers."""
    request = urllib.request.Request(url, headers=headers or {})
    parts = urllib.parse.urlsplit(url)
    header = _INDEX_AUTH.get(f"{parts.scheme}://{parts.netloc.lower()}")
    if header:
        request.add_unredirected_header("Authorization", header)
        return urllib.request.build_opener().open(request)
    return _opener(url).open(request)


def _opener(url: str) -> urllib.request.OpenerDirector:
    """Basic auth from ~/.netrc (mounted as a BuildKit secret) when it has the host."""
    handlers = []
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    try:
        auth = netrc.netrc().authenticators(host)
    except (FileNotFoundError, netrc.NetrcParseError):
        auth = None
    if auth:
        manager = urllib.request.HTTPPasswordMgrWithDefaultRealm()
        manager.add_password(None, url, auth[0], auth[2])
        handlers.append(urllib.request.HTTPBasicAuthHandler(manager))
    return urllib.request.build_opener(*handlers)


def file_url(index: str, name: str, filename: str) -> str:
    project = re.sub(r"[-_.]+", "-", name).lower()
    page_url = index.rstrip("/") + f"/{project}/"
    with _open(page_url, {"Accept": JSON_ACCEPT}) as resp:
        body = resp.read().decode("utf-8")
        kind = resp.headers.get("Content-Type", "")
    if "json" in kind:
        links = [(f["filename"], f["url"]) for f in json.loads(body)["files"]]
    else:
        parser = _Links()
        parser.feed(body)
        links = parser.links
    for text, href in links:
        if text == filename:
            return urllib.parse.urljoin(page_url, href.split("#")[0])
    raise SystemExit(f"fetch: {filename} is not listed on {page_url}")


def fetch(source: dict, dest: str, index: str) -> str:
    url = file_url(index, source["name"], source["filename"])
    path = os.path.join(dest, source["filename"])
    os.makedirs(dest, exist_ok=True)
    digest = hashlib.sha256()
    with _open(url) as resp, open(path, "wb") as out:
        while chunk := resp.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != source["sha256"]:
        os.unlink(path)
        raise SystemExit(f"fetch: {source['filename']}: sha256 {digest.hexdigest()} is not the locked {source['sha256']}")
    return path


def main(argv: list[str]) -> None:
    with open(argv[1]) as handle:
        source = json.load(handle)
    print(fetch(source, argv[2], split_credentials(os.environ.get("PIP_INDEX_URL") or default_index())))


if __name__ == "__main__":
    main(sys.argv)
