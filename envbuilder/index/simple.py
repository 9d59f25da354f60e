"""Parse a project page of the simple repository API into FileInfo values.

Both serialisations carry the same facts (PEP 691 maps them one to one onto PEP 503/592/658/714
attributes), so both parsers produce the same normalised entries and the rest of the client never
knows which one the index spoke.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
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


# The cache's page format: a JSON header line, then one JSON row per file (no repeated keys; the
# URLs' common prefix and trailing filename factored out). One row per line lets a reader skip
# files by name (other platforms' wheels: two thirds of a typical page) before decoding them.
_FORMAT = 3


def files_to_json(files: Iterable[FileInfo]) -> bytes:
    files = list(files)
    prefix = os.path.commonprefix([f.url for f in files]) if files else ""
    prefix = prefix[: prefix.rfind("/") + 1]
    lines = [json.dumps({"format": _FORMAT, "prefix": prefix})]
    for f in files:
        rest = f.url[len(prefix):]
        appended = rest.endswith("/" + f.filename) or rest == f.filename
        row = [f.filename, rest[: len(rest) - len(f.filename)] if appended else rest, appended, f.sha256,
               f.size, f.requires_python, f.yanked, f.upload_time, f.core_metadata, f.core_metadata_sha256]
        lines.append(json.dumps(row, separators=(",", ":")))
    return "\n".join(lines).encode()


class _PlatformMemo:
    """Answers `keep(platform tags)` once per distinct tag string (a page repeats a few dozen)."""

    def __init__(self, keep: Callable[[str], bool]):
        self.keep, self.seen = keep, {}  # type: dict[bytes, bool]

    def keeps_row(self, line: bytes) -> bool:
        end = line.find(b'",', 2)
        if line.find(b".whl", end - 4, end) < 0:
            return True  # sdists are kept: a build can target any platform
        platforms = line[line.rfind(b"-", 2, end) + 1 : end - 4]
        answer = self.seen.get(platforms)
        if answer is None:
            answer = self.seen[platforms] = self.keep(platforms.decode())
        return answer

    def keeps_file(self, file: FileInfo) -> bool:
        if not file.filename.endswith(".whl"):
            return True
        return self.keep(file.filename[:-4].rpartition("-")[2])


def filter_files(files: list[FileInfo], keep: Callable[[str], bool] | None) -> list[FileInfo]:
    """Files whose wheel platform tags `keep` accepts (sdists and non-wheels always stay)."""
    if keep is None:
        return files
    memo = _PlatformMemo(keep)
    return [f for f in files if memo.keeps_file(f)]


def files_from_json(
    data: bytes, project: NormalizedName, index: str, keep: Callable[[str], bool] | None = None
) -> list[FileInfo]:
    """Rebuild FileInfo values from `files_to_json` output.

    `keep(platform_tags)` (e.g. "manylinux_2_17_x86_64.manylinux2014_x86_64") drops wheels before
    they are decoded. ValueError if the data is not in this format (the caller treats it as a miss).
    """
    lines = data.split(b"\n")
    memo = _PlatformMemo(keep) if keep is not None else None
    try:
        header = json.loads(lines[0])
        if header.get("format") != _FORMAT:
            raise ValueError("unknown page format")
        prefix = header["prefix"]
        rows = lines[1:] if memo is None else [line for line in lines[1:] if memo.keeps_row(line)]
        out = []
        for name, rest, appended, sha, size, rp, yanked, uploaded, meta, meta_sha in json.loads(
            b"[" + b",".join(rows) + b"]"  # one decode for the page: per-row loads cost 3x more
        ):
            url = prefix + rest + name if appended else prefix + rest
            out.append(FileInfo(project, name, url, sha, size, rp, yanked, uploaded, meta, meta_sha, index))
        return out
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"damaged cached page: {exc}") from exc
