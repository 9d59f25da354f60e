"""Quoting for every output format a lock value reaches: Dockerfile, shell, requirements files.

The lock schema (envbuilder.lock.model) already refuses control characters and odd shapes, but a
renderer must not rely on who built the Lock it was handed: each value is checked again for the
spot it lands in and either quoted for that format or refused (BadInput, exit 2). TOML, JSON and
YAML exports go through their libraries' writers (tomli_w, json, ruamel), which quote completely.
"""

from __future__ import annotations

import json
import re
import shlex

from envbuilder.errors import BadInput
from envbuilder.lock.model import CONTROL

# What may stand unquoted in a Dockerfile (FROM, AS, COPY paths, ENV names, unquoted ENV values):
# no whitespace, quotes, '$', '\', '#', or anything else a Dockerfile or a shell would interpret.
_DOCKER_WORD = re.compile(r"[A-Za-z0-9._:/@+=,%-]+")


def single_line(value: object, what: str = "value") -> str:
    """`value` as text, refused when it holds a newline or another control character."""
    text = str(value)
    found = CONTROL.search(text)
    if found:
        raise BadInput(f"{what} {text[:60]!r}...: contains the control character {found.group()!r}; "
                       "refusing to render it")
    return text


def dockerfile_word(value: object) -> str:
    """A value placed bare in a Dockerfile (image reference, stage, path, variable name)."""
    text = single_line(value)
    if not _DOCKER_WORD.fullmatch(text):
        raise BadInput(f"{text!r} cannot stand unquoted in a Dockerfile (only letters, digits and ._:/@+=,%-)")
    return text


def dockerfile_string(value: object) -> str:
    """A double-quoted ENV/LABEL value: backslash, quote and '$' escaped, so nothing expands."""
    text = single_line(value).replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{text}"'


def dockerfile_json(value: object) -> str:
    """One element of an exec-form instruction (CMD ["..."]): a JSON string."""
    return json.dumps(single_line(value))


def dockerfile_comment(value: object) -> str:
    """Text after '# ' on one comment line: one line, nothing else to quote."""
    return single_line(value)


def shell_word(value: object) -> str:
    """One word of a POSIX shell line."""
    return shlex.quote(single_line(value))


def requirements_text(value: object) -> str:
    """Text on a requirements-file line. The format has no quoting: pip expands ${VAR}, ' #' starts a
    comment and a trailing '\\' joins lines, so such values are refused, not escaped."""
    text = single_line(value)
    if "${" in text or re.search(r"\s#", text) or text.endswith("\\"):
        raise BadInput(f"{text!r} cannot be written to a requirements file (pip would expand '${{', "
                       "cut at ' #' or join at a trailing '\\')")
    return text


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]#.|<>@~&:])")


def markdown_text(value: object, limit: int = 300) -> str:
    """Untrusted text (a commit subject) as inert inline Markdown: one line, the marks that matter escaped.

    CommonMark lets any ASCII punctuation be backslash-escaped; escaping `[ ] < > | * _ ~ # @ : .`
    and backticks leaves nothing that can open a link, an image, HTML, a table cell, emphasis, an
    @mention, an issue reference or an autolink (`http:`, `www.`) in a GitHub PR body. For text
    inside a line (a list item's body): `-`, `+` and `1.` only matter at a line's start."""
    text = CONTROL.sub(" ", str(value)).strip()
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def markdown_code(value: object, limit: int = 300) -> str:
    """Untrusted text as a Markdown code span: one line, no backtick that could close it early."""
    text = CONTROL.sub(" ", str(value)).replace("`", "'").strip()
    return f"`{text if len(text) <= limit else text[: limit - 1] + '…'}`"
