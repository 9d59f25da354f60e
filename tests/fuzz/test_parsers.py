"""No traceback, ever: property-based fuzzing of every parser that reads what a user or a server
hands envbuilder (issue 11).

Each case ends either in a value or in an envbuilder error with exit 1, 2 or 3 whose message names
the file (and, where the format has them, the line and key); any other exception, or a message that
says nothing specific, fails the suite. Runs are derandomised with no example database, so CI sees the
same cases every time; ENVBUILDER_FUZZ_EXAMPLES (default 200) sets the budget per parser. Run with
`--hypothesis-show-statistics` to see how the cases of each parser ended.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from envbuilder.errors import EnvbuilderError

REPO = Path(__file__).resolve().parents[2]
H200 = REPO / "tests" / "fixtures" / "h200"
EXAMPLES = int(os.environ.get("ENVBUILDER_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))
#: What a catch-all handler would say: a message like these names nothing and fails the suite.
GENERIC = re.compile(r"(?i)^\W*(error|invalid( input)?|bad input|something went wrong|unexpected error|"
                     r"an error occurred|failed|exception)\W*$")


def judge(origin: str, call: Callable[[], object], *, where: bool = True) -> object:
    """Run `call`; an EnvbuilderError must carry exit 1-3 and name `origin` (and a line or key)."""
    try:
        result = call()
    except EnvbuilderError as exc:
        message = str(exc)
        assert exc.exit_code in (1, 2, 3), (exc.exit_code, message)
        assert not GENERIC.match(message.split(":")[-1]), message
        assert origin in message, f"the message does not name {origin}: {message}"
        if where:
            assert re.search(re.escape(origin) + r":\d+", message) or "key" in message, \
                f"the message names no line or key: {message}"
        event(f"exit {exc.exit_code}")
        return exc
    event("accepted")
    return result


def mutate(text: str, alphabet: str) -> st.SearchStrategy[str]:
    @st.composite
    def build(draw: st.DrawFn) -> str:
        out = text
        for _ in range(draw(st.integers(1, 6))):
            at = draw(st.integers(0, len(out)))
            chunk = draw(st.text(alphabet=alphabet, min_size=1, max_size=6))
            end = min(len(out), at + draw(st.integers(1, 16)))
            out = draw(st.sampled_from([out[:at] + chunk + out[at:], out[:at] + out[end:], out[:at] + chunk + out[end:]]))
        return out
    return build()


def corrupt_bytes(data: bytes) -> st.SearchStrategy[bytes]:
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=8)) + data[at + draw(st.integers(0, 8)):]
    return build()


# -- matrix YAML --------------------------------------------------------------------------------
MATRIX = (REPO / "matrices" / "cpu-llamacpp.yaml").read_text()
YAML_CHARS = ":-[]{},#&*!|>'\"%@`?\t\n ~0123456789abcxyz_.=<\\"
HOSTILE_YAML = [
    "!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!!binary aGVsbG8=", "!custom x",
    "&a [*a]", ".nan", "-.inf", "0x1F", "0o17", "1e400", "~", "!!set {a, b}", "!!omap [a: 1]", "'\\x00'",
    "\"\\uD800\"", "[" * 200 + "]" * 200, "{a: 1, a: 2}",
]


@st.composite
def alias_bomb(draw: st.DrawFn) -> str:
    width, depth = draw(st.integers(2, 12)), draw(st.integers(1, 9))
    lines = ['l0: &l0 ["lol"]']
    for n in range(1, depth + 1):
        lines.append(f"l{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * width) + "]")
    return "schema: 1\ntarget: fuzz\n" + "\n".join(lines) + "\n"


@st.composite
def tagged(draw: st.DrawFn) -> str:
    lines = MATRIX.splitlines()
    at = draw(st.integers(1, len(lines) - 1))
    key = lines[at].split(":")[0] if ":" in lines[at] else "description"
    return "\n".join([*lines[:at], f"{key}: {draw(st.sampled_from(HOSTILE_YAML))}", *lines[at + 1:]]) + "\n"


MATRIX_CASES = st.one_of(
    mutate(MATRIX, YAML_CHARS).map(str.encode), alias_bomb().map(str.encode), tagged().map(str.encode),
    corrupt_bytes(MATRIX.encode()), st.binary(max_size=200),
)


@FUZZ
@given(MATRIX_CASES)
def test_matrix_yaml(tmp_path_factory, data: bytes):
    from envbuilder.matrix import load_target

    root = tmp_path_factory.mktemp("m")
    (root / "matrices").mkdir()
    (root / "matrices" / "fuzz.yaml").write_bytes(data)
    judge("fuzz.yaml", lambda: load_target("fuzz", root), where=False)


# -- lock TOML ----------------------------------------------------------------------------------
LOCK_TEXT = (REPO / "locks" / "cpu-llamacpp.lock.toml").read_text()
TOML_CHARS = "[]{}=\"'.,#\n \t0123456789abcdefxyz-_+:\\"
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                   st.text(max_size=12), st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=4),
                                                                                           st.integers(), max_size=2))


def _paths(node: object, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [path] + [p for k, v in node.items() for p in _paths(v, (*path, k))]
    if isinstance(node, list):
        return [path] + [p for i, v in enumerate(node) for p in _paths(v, (*path, i))]
    return [path]


@st.composite
def retyped_lock(draw: st.DrawFn) -> bytes:
    data = tomllib.loads(LOCK_TEXT)
    paths = [p for p in _paths(data) if p]
    path = draw(st.sampled_from(paths))
    node = data
    for part in path[:-1]:
        node = node[part]
    value = draw(LEAVES)
    node[path[-1]] = value if value is not None else "null"
    try:
        return tomli_w.dumps(data).encode()
    except (TypeError, ValueError):  # a value TOML cannot hold (nan is fine, None is not)
        return LOCK_TEXT.encode()


LOCK_CASES = st.one_of(mutate(LOCK_TEXT, TOML_CHARS).map(str.encode), retyped_lock(), corrupt_bytes(LOCK_TEXT.encode()),
                       st.binary(max_size=200))


@FUZZ
@given(LOCK_CASES)
def test_lock_toml(tmp_path_factory, data: bytes):
    from envbuilder.lock import read_lock

    path = tmp_path_factory.mktemp("l") / "fuzz.lock.toml"
    path.write_bytes(data)
    judge("fuzz.lock.toml", lambda: read_lock(path))


# -- nvidia-smi CSV and -q, /proc driver files --------------------------------------------------
SMI_CSV = (H200 / "nvidia-smi.csv").read_text()
SMI_Q = (H200 / "nvidia-smi-q.txt").read_text()
SMI_CHARS = ",\"\n :[]/.0123456789ABCDEFMiBabcnine\t\r"
SMI_VALUES = ["", "abc MiB", "nine", "[N/A]", "-1", "9.0.0", "1e9", "Driver Version :", "x" * 300, "\x00", '"', ","]


@st.composite
def smi_field_swap(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines()
    at = draw(st.integers(0, len(lines) - 1))
    line = lines[at]
    sep = ":" if ":" in line else ","
    head = line.rsplit(sep, 1)[0] if sep in line else line
    lines[at] = f"{head}{sep} {draw(st.sampled_from(SMI_VALUES) | st.text(alphabet=SMI_CHARS, max_size=8))}"
    return "\n".join(lines) + "\n"


@st.composite
def long_line(draw: st.DrawFn, text: str) -> str:
    return text + draw(st.sampled_from(['"', "", "x,"])) + "y" * draw(st.sampled_from([200_000, 1 << 20, 10 << 20]))


@FUZZ
@given(st.one_of(mutate(SMI_CSV, SMI_CHARS), smi_field_swap(SMI_CSV), long_line(SMI_CSV), st.text(max_size=200)))
def test_nvidia_smi_csv(text: str):
    from envbuilder.doctor.nvidia import parse_saved

    judge("gpus.csv", lambda: parse_saved(text, "gpus.csv"), where=False)


@FUZZ
@given(st.one_of(mutate(SMI_Q, SMI_CHARS), smi_field_swap(SMI_Q), long_line(SMI_Q),
                 st.text(max_size=200).map(lambda t: "Driver Version : " + t)))
def test_nvidia_smi_q(text: str):
    from envbuilder.doctor.nvidia import parse_smi_q

    judge("smi-q.txt", lambda: parse_smi_q(text, "smi-q.txt"), where=False)


PROC_VERSION = (H200 / "proc-driver-nvidia-version.txt").read_text()
PROC_MODULES = (H200 / "proc-modules.txt").read_text()
PROC_MEMINFO = (H200 / "proc-meminfo.txt").read_text()


@FUZZ
@given(st.one_of(mutate(PROC_VERSION, SMI_CHARS), st.binary(max_size=100).map(lambda b: b.decode("latin-1"))),
       st.one_of(mutate(PROC_MODULES, " \n\t0123456789abcnvidia_-"), st.text(max_size=100)),
       st.one_of(mutate(PROC_MEMINFO, " \n:kB0123456789abc"), st.text(max_size=100)))
def test_proc_driver_files(tmp_path_factory, version: str, modules: str, meminfo: str):
    from envbuilder.doctor.capacity import probe_capacity
    from envbuilder.doctor.nvidia import probe_driver
    from envbuilder.doctor.sources import HostSources

    root = tmp_path_factory.mktemp("host")
    for rel, text in (("proc/driver/nvidia/version", version), ("proc/modules", modules), ("proc/meminfo", meminfo)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, errors="surrogateescape")
    sources = HostSources(root=root, environ={"PATH": str(root / "no-bin")}, nvml=None, docker=False)
    judge("/proc", lambda: (probe_driver(sources), probe_capacity(sources)), where=False)


# -- SSE streams ---------------------------------------------------------------------------------
def _sse(*payloads: object) -> str:
    return "".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + "data: [DONE]\n\n"


SSE = _sse({"choices": [{"index": 0, "text": "a", "finish_reason": None}]},
           {"choices": [{"index": 0, "text": "b", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
SSE_CHARS = "data:{}[]\",\n\r :event0123456789abcnull"
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                           lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(
                               ["choices", "text", "usage", "delta", "content", "finish_reason", "index", "error",
                                "prompt_tokens", "completion_tokens", "meta_info", "message"]), c, max_size=4),
                           max_leaves=12)


@FUZZ
@given(st.one_of(mutate(SSE, SSE_CHARS), st.lists(JSON_VALUES, max_size=4).map(lambda ps: _sse(*ps)),
                 st.binary(max_size=200).map(lambda b: b.decode("latin-1"))),
       st.sampled_from(["completions", "chat", "generate"]), st.integers(1, 5))
def test_sse_streams(text: str, api: str, splits: int):
    """A stream never raises: it is a measured request or a counted failure with a kind and message."""
    from envbuilder.smoke.apis import APIS
    from envbuilder.smoke.client import Exchange
    from envbuilder.smoke.records import to_result

    data = text.encode("utf-8", "surrogateescape")
    step = max(1, len(data) // splits)
    reads = [(float(i), data[i * step:(i + 1) * step if i < splits - 1 else None]) for i in range(splits)]
    result = to_result(Exchange(t_send=-1.0, reads=reads, t_end=float(splits), status=200), APIS[api])
    if result.ok:
        event("measured")
    else:
        assert result.error_kind and result.error, result
        event(f"failed: {result.error_kind}")


# -- simple-API JSON and HTML pages --------------------------------------------------------------
GOOD = "a" * 64
PAGE_JSON = json.dumps({"meta": {"api-version": "1.1"}, "name": "demo", "files": [
    {"filename": "demo-1.0-py3-none-any.whl", "url": "../../f/demo-1.0-py3-none-any.whl", "hashes": {"sha256": GOOD},
     "size": 10, "requires-python": ">=3.8", "core-metadata": {"sha256": GOOD}, "yanked": False},
    {"filename": "demo-1.0.tar.gz", "url": "https://h.example/f/demo-1.0.tar.gz", "hashes": {"sha256": GOOD}}]})
PAGE_HTML = (f'<html><head><base href="/x/"></head><body><a href="../f/demo-1.0-py3-none-any.whl#sha256={GOOD}" '
             f'data-requires-python="&gt;=3.8" data-core-metadata="sha256={GOOD}">demo</a>'
             f'<a href="../f/..%2F..%2Fevil-1.0.tar.gz#sha256={GOOD}">e</a></body></html>')
PAGE_CHARS = '{}[]":,<>/=#%&;. \nadefhlmnrstwyz0123456789'
JSON_FILE_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=40), st.lists(st.integers(), max_size=2),
                             st.dictionaries(st.sampled_from(["sha256", "md5"]), st.text(max_size=70), max_size=2))


@st.composite
def retyped_page(draw: st.DrawFn) -> bytes:
    page = json.loads(PAGE_JSON)
    entry = page["files"][draw(st.integers(0, 1))]
    key = draw(st.sampled_from(["filename", "url", "hashes", "size", "requires-python", "core-metadata", "yanked",
                                "upload-time", "dist-info-metadata"]))
    entry[key] = draw(JSON_FILE_VALUES | st.sampled_from(["../../evil.whl", "/etc/passwd", "a/b.whl", "..",
                                                          "demo-1.0-py3-none-any.whl\x00.whl", "file:///etc/x"]))
    return json.dumps(page).encode()


@FUZZ
@given(st.one_of(mutate(PAGE_JSON, PAGE_CHARS).map(lambda t: (t.encode(), "application/vnd.pypi.simple.v1+json")),
                 retyped_page().map(lambda b: (b, "application/vnd.pypi.simple.v1+json")),
                 mutate(PAGE_HTML, PAGE_CHARS).map(lambda t: (t.encode(), "text/html")),
                 st.tuples(st.binary(max_size=300), st.sampled_from(["text/html", "application/vnd.pypi.simple.v1+json",
                                                                     "application/json", ""]))))
def test_simple_api_pages(case: tuple[bytes, str]):
    """A page parses into safe rows or is refused; through the client a refusal is exit 3 naming the page."""
    from envbuilder.index.simple import SAFE_FILENAME, PageError, parse_page

    body, content_type = case
    try:
        rows = parse_page(body, content_type, "http://u:SECRET@127.0.0.1/simple/demo/")
    except PageError as exc:
        assert "127.0.0.1/simple/demo/" in str(exc) and "SECRET" not in str(exc), str(exc)
        event("refused")
        return
    for row in rows:
        assert SAFE_FILENAME.fullmatch(row[0]) and ".." not in row[0], row
        assert row[2] is None or re.fullmatch(r"[0-9a-f]{64}", row[2]), row
        assert row[1].startswith(("http://", "https://")) and "SECRET" not in row[1], row
        assert row[3] is None or (type(row[3]) is int and row[3] >= 0), row
    event(f"{len(rows)} rows")


@pytest.mark.parametrize("parser", ["matrix", "lock", "csv", "q", "proc", "sse", "pages"])
def test_the_budget_is_at_least_200_examples_per_parser(parser):
    assert EXAMPLES >= 200 or os.environ.get("ENVBUILDER_CI", "") in ("", "0")
