"""Parse a project page of the simple repository API into FileInfo values.

Both serialisations carry the same facts (PEP 691 maps them one to one onto PEP 503/592/658/714
attributes), so both parsers produce the same normalised entries and the rest of the client never
knows which one the index spoke.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from packaging.utils import NormalizedName

from envbuilder.index.models import FileInfo, file_kind

JSON_CONTENT_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_CONTENT_TYPE = "application/vnd.pypi.simple.v1+html"
#: Ask for PEP 691 JSON first; old indexes answer plain HTML, which is parsed just as well.
ACCEPT = f"{JSON_CONTENT_TYPE}, {HTML_CONTENT_TYPE};q=0.2, text/html;q=0.01"


class PageError(ValueError):
    """The index answered with something that is not a simple-API project page."""


def parse_page(
    body: bytes, content_type: str, page_url: str, project: NormalizedName, index: str
) -> list[FileInfo]:
    """Dispatch on the response's content type; unknown types are an error, not a guess."""
    media = content_type.split(";")[0].strip().lower()
    if media == JSON_CONTENT_TYPE:
        return parse_json_page(body, page_url, project, index)
    if media in (HTML_CONTENT_TYPE, "text/html"):
        return parse_html_page(body.decode("utf-8", "replace"), page_url, project, index)
    raise PageError(f"{page_url}: unexpected content type {content_type!r} for a simple-API page")


def _hash_from(hashes: Any) -> str | None:
    if isinstance(hashes, dict):
        value = hashes.get("sha256")
        return value.lower() if isinstance(value, str) else None
    return None


def _metadata_flag(value: Any) -> tuple[bool, str | None]:
    """PEP 714 `core-metadata` (or legacy `dist-info-metadata`): bool or a dict of hashes."""
    if isinstance(value, dict):
        return True, _hash_from(value)
    return bool(value), None


def _yanked(value: Any) -> str | None:
    if value is True:
        return ""
    if isinstance(value, str):
        return value
    return None


def parse_json_page(body: bytes, page_url: str, project: NormalizedName, index: str) -> list[FileInfo]:
    try:
        data = json.loads(body)
        entries = data["files"]
    except (ValueError, KeyError, TypeError) as exc:
        raise PageError(f"{page_url}: not a PEP 691 project page: {exc}") from exc
    out = []
    for entry in entries:
        filename = entry.get("filename", "")
        if file_kind(filename) is None:
            continue
        meta = entry.get("core-metadata", entry.get("dist-info-metadata", False))
        has_meta, meta_hash = _metadata_flag(meta)
        out.append(
            FileInfo(
                project=project,
                filename=filename,
                url=urljoin(page_url, entry["url"]),
                sha256=_hash_from(entry.get("hashes")),
                size=entry.get("size"),
                requires_python=entry.get("requires-python") or None,
                yanked=_yanked(entry.get("yanked", False)),
                upload_time=entry.get("upload-time"),
                core_metadata=has_meta,
                core_metadata_sha256=meta_hash,
                index=index,
            )
        )
    return out


class _AnchorCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag == "a":
            self.anchors.append(dict(attrs))


def _hash_attr(value: str | None) -> tuple[bool, str | None]:
    """data-core-metadata is "true" or "<algo>=<hex>" (PEP 658/714)."""
    if value is None:
        return False, None
    algo, _, digest = value.partition("=")
    return True, (digest.lower() if algo == "sha256" and digest else None)


def parse_html_page(text: str, page_url: str, project: NormalizedName, index: str) -> list[FileInfo]:
    collector = _AnchorCollector()
    collector.feed(text)
    base = urljoin(page_url, collector.base) if collector.base else page_url
    return [f for f in (_anchor_file(a, base, project, index) for a in collector.anchors) if f is not None]


def _anchor_file(attrs: dict[str, str | None], base: str, project: NormalizedName, index: str) -> FileInfo | None:
    href = attrs.get("href")
    if not href:
        return None
    url, fragment = urldefrag(urljoin(base, href))
    filename = unquote(url.rsplit("/", 1)[-1])
    if file_kind(filename) is None:
        return None
    algo, _, digest = fragment.partition("=")
    meta = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
    has_meta, meta_hash = _hash_attr(meta)
    return FileInfo(
        project=project,
        filename=filename,
        url=url,
        sha256=digest.lower() if algo == "sha256" and digest else None,
        requires_python=attrs.get("data-requires-python") or None,
        yanked=(attrs.get("data-yanked") or "") if "data-yanked" in attrs else None,
        core_metadata=has_meta,
        core_metadata_sha256=meta_hash,
        index=index,
    )


def files_to_json(files: Iterable[FileInfo]) -> bytes:
    """The cache's page format: FileInfo fields, minus the index name (the cache keys by URL)."""
    return json.dumps([{k: v for k, v in f.to_json().items() if k != "index"} for f in files],
                      separators=(",", ":")).encode()


def files_from_json(data: bytes, index: str) -> list[FileInfo]:
    return [FileInfo(index=index, **d) for d in json.loads(data)]
