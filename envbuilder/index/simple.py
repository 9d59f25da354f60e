"""Parse a project page of the simple repository API into FileInfo values.

Both serialisations carry the same facts (PEP 691 maps them one to one onto PEP 503/592/658/714
attributes), so both parsers produce the same normalised rows and the rest of the client never
knows which one the index spoke. Rows are plain tuples, turned into FileInfo values only for the
files a target can use: a page of 15,000 files is parsed, cached and filtered without building
15,000 objects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from html.parser import HTMLParser
from typing import Any
from urllib.parse import unquote, urljoin

from packaging.utils import NormalizedName

from envbuilder.index import fastjson
from envbuilder.index.http import redact, strip_credentials
from envbuilder.index.models import DIST_SUFFIXES, FileInfo, file_kind

JSON_CONTENT_TYPE = "application/vnd.pypi.simple.v1+json"
HTML_CONTENT_TYPE = "application/vnd.pypi.simple.v1+html"
#: Ask for PEP 691 JSON first; old indexes answer plain HTML, which is parsed just as well.
ACCEPT = f"{JSON_CONTENT_TYPE}, {HTML_CONTENT_TYPE};q=0.2, text/html;q=0.01"


class PageError(ValueError):
    """The index answered with something that is not a simple-API project page."""


# -- what a page may say: the index is untrusted -------------------------------------------
#: A distribution file name as wheels and sdists spell it: no path separators, no "..", no
#: control characters (a page's "../../evil.whl", also when %2F-encoded in a link, is dropped).
SAFE_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+!~-]{0,250}\.(?:whl|tar\.gz|zip)")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def safe_filename(name: object) -> bool:
    return isinstance(name, str) and SAFE_FILENAME.fullmatch(name) is not None and ".." not in name


def safe_sha256(value: object) -> bool:
    return isinstance(value, str) and SHA256_HEX.fullmatch(value) is not None


def _clean(row: Row) -> Row | None:
    """The row with every field checked, or None when it cannot be used safely.

    A file whose name could leave its cache folder, whose URL is not http(s), or whose published
    hash is not a sha256 is dropped: the resolver never sees it. Optional facts of the wrong type
    (a size that is a string, a requires-python that is a list) become unknown.
    """
    filename, url, sha, size, requires_python, yanked, upload_time, has_meta, meta_hash = row
    if not safe_filename(filename) or not isinstance(url, str) or not url.startswith(("https://", "http://")):
        return None
    if sha is not None and not safe_sha256(sha):
        return None
    if type(size) is not int or size < 0:
        size = None
    return (
        filename,
        strip_credentials(url) if "@" in url else url,  # the index's credentials stay in memory only
        sha,
        size,
        requires_python if isinstance(requires_python, str) else None,
        yanked if isinstance(yanked, str) else None,
        upload_time if isinstance(upload_time, str) else None,
        bool(has_meta),
        meta_hash if safe_sha256(meta_hash) else None,
    )


#: One file: FileInfo's fields between `project` and `index`, in order.
Row = tuple[str, str, "str | None", "int | None", "str | None", "str | None", "str | None", bool, "str | None"]


def parse_page(body: bytes, content_type: str, page_url: str) -> list[Row]:
    """Dispatch on the response's content type; unknown types are an error, not a guess."""
    media = content_type.split(";")[0].strip().lower()
    if media == JSON_CONTENT_TYPE:
        return parse_json_page(body, page_url)
    if media in (HTML_CONTENT_TYPE, "text/html"):
        return parse_html_page(body.decode("utf-8", "replace"), page_url)
    raise PageError(f"{redact(page_url)}: unexpected content type {content_type[:80]!r} for a simple-API page")


def _absolute(base: str, url: str) -> str:
    """urljoin, skipped for the absolute URLs most indexes give (urljoin is the hot spot)."""
    return url if url.startswith(("https://", "http://")) else urljoin(base, url)


def _hash_from(hashes: Any) -> str | None:
    if isinstance(hashes, dict):
        value = hashes.get("sha256")
        return value.lower() if isinstance(value, str) else None
    return None


def _yanked(value: Any) -> str | None:
    if value is True:
        return ""
    if isinstance(value, str):
        return value
    return None


def parse_json_page(body: bytes, page_url: str) -> list[Row]:
    try:
        entries = fastjson.loads(body)["files"]
        rows = [_json_row(e, page_url) for e in entries if e["filename"].endswith(DIST_SUFFIXES)]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PageError(f"{redact(page_url)}: not a PEP 691 project page: {str(exc)[:200]!r}") from exc
    return [clean for clean in map(_clean, rows) if clean is not None]


def _json_row(entry: dict[str, Any], page_url: str) -> Row:
    # the hot loop of a cold run (170,000 entries for a 170-package closure): flat, common cases inline
    get = entry.get
    url = entry["url"]
    if type(url) is not str:
        raise TypeError(f"file {entry['filename']!r}: url is {type(url).__name__}, not a string")
    meta = get("core-metadata")
    if meta is None:
        meta = get("dist-info-metadata", False)
    has_meta, meta_hash = (True, _hash_from(meta)) if type(meta) is dict else (bool(meta), None)
    yanked = get("yanked", False)
    hashes = get("hashes")
    sha = hashes.get("sha256") if type(hashes) is dict else None
    return (
        entry["filename"],
        url if url.startswith(("https://", "http://")) else urljoin(page_url, url),
        sha.lower() if type(sha) is str else None,
        get("size"),
        get("requires-python") or None,
        None if yanked is False else _yanked(yanked),
        get("upload-time"),
        has_meta,
        meta_hash,
    )


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


def parse_html_page(text: str, page_url: str) -> list[Row]:
    collector = _AnchorCollector()
    collector.feed(text)
    base = urljoin(page_url, collector.base) if collector.base else page_url
    rows = (_anchor_row(a, base) for a in collector.anchors)
    return [clean for clean in (_clean(row) for row in rows if row is not None) if clean is not None]


def _anchor_row(attrs: dict[str, str | None], base: str) -> Row | None:
    href = attrs.get("href")
    if not href:
        return None
    url, _, fragment = _absolute(base, href).partition("#")
    filename = unquote(url.rsplit("/", 1)[-1])
    if file_kind(filename) is None:
        return None
    algo, _, digest = fragment.partition("=")
    has_meta, meta_hash = _hash_attr(attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata")))
    return (
        filename,
        url,
        digest.lower() if algo == "sha256" and digest else None,
        None,
        attrs.get("data-requires-python") or None,
        (attrs.get("data-yanked") or "") if "data-yanked" in attrs else None,
        None,
        has_meta,
        meta_hash,
    )


# -- filtering and building FileInfo -------------------------------------------------------
def wheel_platforms(filename: str) -> str:
    """The platform field of a wheel name ("manylinux_2_17_x86_64.manylinux2014_x86_64"); "" else."""
    return filename[:-4].rpartition("-")[2] if filename.endswith(".whl") else ""


class _Keep:
    """`keep(platforms)` memoised per distinct platform field (a page repeats a few dozen)."""

    def __init__(self, keep: Callable[[str], bool] | None):
        self.keep = keep
        self.seen: dict[str, bool] = {"": True}  # sdists are kept: a build can target any platform

    def __call__(self, platforms: str) -> bool:
        if self.keep is None:
            return True
        answer = self.seen.get(platforms)
        if answer is None:
            answer = self.seen[platforms] = self.keep(platforms)
        return answer


def group_by_platform(rows: Iterable[Row]) -> dict[str, list[Row]]:
    """Rows by wheel platform field, in order of first appearance (index order within a group).

    Fresh and cached pages both come out in this order, so callers see the same list either way.
    """
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(wheel_platforms(row[0]), []).append(row)
    return groups


def to_files(groups: dict[str, list[Row]], project: NormalizedName, index: str,
             keep: Callable[[str], bool] | None = None) -> list[FileInfo]:
    """FileInfo values for the groups (`group_by_platform`) whose platform field `keep` accepts."""
    kept = _Keep(keep)
    return [FileInfo(project, *row, index) for platforms, group in groups.items() if kept(platforms) for row in group]


# -- the cache's page format ---------------------------------------------------------------
# A JSON header line, then one line per distinct wheel platform field: [platforms, [row, ...]]
# with the URLs' common prefix factored out. A reader decodes only the lines of platforms its
# target can use (a Linux x86_64 target: about a quarter of a typical page's files).
_FORMAT = 4


def encode_page(groups: dict[str, list[Row]]) -> bytes:
    """The cache's bytes for a page given as `group_by_platform` output."""
    urls = [r[1] for group in groups.values() for r in group]
    prefix = os.path.commonprefix(urls) if urls else ""
    prefix = prefix[: prefix.rfind("/") + 1]
    cut = len(prefix)
    lines = [fastjson.dumps({"format": _FORMAT, "prefix": prefix})]
    lines += [fastjson.dumps([platforms, [[r[0], r[1][cut:], *r[2:]] for r in group]])
              for platforms, group in groups.items()]
    return b"\n".join(lines)


def decode_page(data: bytes, project: NormalizedName, index: str,
                keep: Callable[[str], bool] | None = None) -> list[FileInfo]:
    """FileInfo values from `encode_page` output, decoding only the platform groups `keep` accepts.

    ValueError if the data is not in this format (the caller treats that as a cache miss).
    """
    lines = data.split(b"\n")
    kept = _Keep(keep)
    try:
        header = fastjson.loads(lines[0])
        if header.get("format") != _FORMAT:
            raise ValueError("unknown page format")
        prefix = header["prefix"]
        chosen = [line for line in lines[1:] if kept(line[2 : line.index(b'"', 2)].decode())]
        out = []
        for _platforms, group in fastjson.loads(b"[" + b",".join(chosen) + b"]"):
            for name, rest, *fields in group:
                out.append(FileInfo(project, name, prefix + rest, *fields, index))
        return out
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"damaged cached page: {exc!r}") from exc
