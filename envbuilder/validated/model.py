"""A validated record: one smoke run (or one imported claim) as evidence for one lock on one host.

Why a strict model with bounded, printable fields: records arrive in pull requests from anyone,
and the gate and doctor print them into terminals, Markdown comments and annotations. Unknown
keys, control characters, NaN, absurd lengths and malformed digests are rejected at load time,
so nothing downstream ever has to wonder what a field may hold.

The record names its report only by its sha256: where the report lives is derived from where the
record lives (`<record>.report.json`, see envbuilder.validated.store), never from record content,
so a hostile record cannot point the verifier at a file outside its folder.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from envbuilder.model import StrictModel

RECORD_VERSION = 1

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _printable(value: str) -> str:
    """No terminal escapes, no bidi overrides, no NUL: a record's text is shown to reviewers verbatim."""
    if _CONTROL.search(value):
        raise ValueError("contains control or bidirectional-override characters")
    return value


def _one_line(value: str) -> str:
    if "\n" in value or "\t" in value:
        raise ValueError("must be a single line")
    return _printable(value)


def _plain(value: str) -> str:
    """Shown in PR comments: no Markdown/HTML links, images, tags or code spans can ride along."""
    if any(c in value for c in "<>[]`"):
        raise ValueError("must not contain any of < > [ ] `")
    return _one_line(value)


Text = Annotated[str, Field(max_length=2000), AfterValidator(_printable)]
Plain = Annotated[str, Field(max_length=300), AfterValidator(_plain)]
Line = Annotated[str, Field(max_length=300), AfterValidator(_one_line)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Digest = Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
Figure = Annotated[float, Field(allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0, le=10**9)]

Kind = Literal["run", "imported"]
Verdict = Literal["passed", "failed", "imported"]
LockSource = Literal["image", "lock-file", "given"]

#: The headline figures a record keeps per concurrency level (names as in the smoke report).
HEADLINE = ("output_tok_s", "total_tok_s", "request_s", "error_rate", "ttft_ms_p50", "tpot_ms_p50", "itl_ms_p50")


class HostFingerprint(StrictModel):
    """What makes two hosts "the same hardware" for a benchmark; never a hostname or serial number.

    GPU model, count and memory, driver and the CUDA version the driver supports, CPU count and
    memory (rounded to whole GiB, since kernels reserve slightly different amounts), machine arch.
    """

    machine: Plain | None = None
    gpu_model: Plain | None = None
    gpu_count: Count | None = None
    gpu_memory_mib: Count | None = None
    driver: Plain | None = None
    cuda_driver: Plain | None = None
    cpu_count: Count | None = None
    memory_gib: Count | None = None

    def hardware(self) -> tuple:
        """The parts that make the hardware; driver and CUDA are software, compared separately."""
        return (self.machine, self.gpu_model, self.gpu_count, self.gpu_memory_mib, self.cpu_count, self.memory_gib)

    def describe(self) -> str:
        gpus = f"{self.gpu_count}x {self.gpu_model}" if self.gpu_count and self.gpu_model else "no GPU"
        driver = f", driver {self.driver}" + (f" (CUDA {self.cuda_driver})" if self.cuda_driver else "") \
            if self.driver else ""
        cpus = f", {self.cpu_count} CPUs" if self.cpu_count else ""
        memory = f", {self.memory_gib} GiB" if self.memory_gib is not None else ""
        return f"{gpus}{driver}{cpus}{memory}"


class ImageRef(StrictModel):
    """The image a run came from: its id (from the engine) and the lock digest it was built from."""

    id: Digest | None = None
    lock_digest: Digest | None = None
    reference: Line | None = None  # the tag the user named, for people; the id is what identifies it


class WeightsFile(StrictModel):
    file: Line
    sha256: Sha256
    size: Count | None = None


class ServerRef(StrictModel):
    kind: Line | None = None
    command: Text | None = None  # None: `smoke` against a server it did not start
    model: Line | None = None
    model_revision: Line | None = None  # hub commit, when the weights came from a hub snapshot
    weights: tuple[WeightsFile, ...] = Field(default=(), max_length=10000)


class Workload(StrictModel):
    """The smoke workload in brief; `profile_sha256` pins the whole profile exactly."""

    profile_sha256: Sha256
    api: Line
    prompt_tokens: Count
    max_tokens: Count
    concurrency: tuple[Count, ...] = Field(max_length=100)
    requests_per_level: Count | None = None
    repeats: Count = 1


class LevelFigures(StrictModel):
    """The headline figures of one concurrency level: means over the level's repeats."""

    concurrency: Count
    requests: Count | None = None  # None: an imported claim that did not say
    failed: Count | None = None
    output_tok_s: Figure | None = None
    total_tok_s: Figure | None = None
    request_s: Figure | None = None
    error_rate: Figure | None = None
    ttft_ms_p50: Figure | None = None
    tpot_ms_p50: Figure | None = None
    itl_ms_p50: Figure | None = None


class ReportRef(StrictModel):
    sha256: Sha256
    size: Count


class Record(StrictModel):
    """One piece of evidence. `kind = "imported"` records carry no report and never count."""

    record_version: Literal[1] = RECORD_VERSION
    target: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")]
    kind: Kind
    verdict: Verdict
    date: Annotated[str, Field(pattern=r"^\d{4}-\d{2}(-\d{2}(T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2}))?)?$")]
    tool_version: Line
    lock_digest: Digest | None = None
    lock_source: LockSource | None = None
    image: ImageRef | None = None
    host: HostFingerprint = Field(default_factory=HostFingerprint)
    server: ServerRef = Field(default_factory=ServerRef)
    workload: Workload | None = None
    levels: tuple[LevelFigures, ...] = Field(default=(), max_length=100)
    reasons: tuple[Line, ...] = Field(default=(), max_length=100)  # why a failed run failed
    report: ReportRef | None = None
    note: Annotated[str, Field(max_length=1000), AfterValidator(_plain)] | None = None  # imported: the claim

    def headline(self) -> str:
        """The figure people quote: the highest level's total tok/s, else what was imported."""
        top = max(self.levels, key=lambda lv: lv.concurrency, default=None)
        if top is None or top.total_tok_s is None:
            return self.note or "no figures"
        return f"{top.total_tok_s:,.0f} total tok/s at concurrency {top.concurrency}"
