"""The sweep: calibrate prompts, warm up, then run every concurrency level `repeats` times.

Closed loop by default (a new request starts as soon as one of `concurrency` slots frees); with a
request rate, arrivals follow a seeded Poisson process (exponential gaps, scheduled on absolute
times so sleeps do not drift) and still never exceed the concurrency.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from envbuilder.smoke.client import Exchange, Session
from envbuilder.smoke.prompts import Calibration, calibrate, prompt_text
from envbuilder.smoke.records import RequestResult, to_result


class Progress(Protocol):
    def start(self, label: str, total: int) -> None: ...
    def advance(self, failed: bool) -> None: ...
    def finish(self) -> None: ...


class NoProgress:
    def start(self, label: str, total: int) -> None: ...
    def advance(self, failed: bool) -> None: ...
    def finish(self) -> None: ...


@dataclass
class RunData:
    concurrency: int
    run: int
    results: list[RequestResult]


@dataclass
class SweepData:
    calibration: Calibration
    warmup_failed: int
    runs: list[RunData] = field(default_factory=list)


async def fire(session: Session, prompts: list[str], concurrency: int, rate: float | None, seed: int,
               on_done: Callable[[Exchange], None]) -> list[Exchange]:
    """Send every prompt with at most `concurrency` in flight; return the exchanges in prompt order."""
    slots = asyncio.Semaphore(concurrency)
    gaps = random.Random(seed)
    out: list[Exchange | None] = [None] * len(prompts)

    async def one(i: int) -> None:
        try:
            out[i] = await session.send(prompts[i])
            on_done(out[i])
        finally:
            slots.release()

    tasks = []
    due = time.perf_counter()
    for i in range(len(prompts)):
        if rate:
            due += gaps.expovariate(rate)
            if (wait := due - time.perf_counter()) > 0:
                await asyncio.sleep(wait)
        await slots.acquire()
        tasks.append(asyncio.create_task(one(i)))
    await asyncio.gather(*tasks)
    return [ex for ex in out if ex is not None]


async def _measure_prompt(session: Session, prompt: str) -> int | None:
    result = to_result(await session.send(prompt, max_tokens=1), session.api)
    return result.prompt_tokens if result.ok else None


class LevelDeadline(Exception):
    """A concurrency level ran past the profile's `level_deadline_s`."""

    def __init__(self, concurrency: int, seconds: float):
        super().__init__(f"concurrency {concurrency} did not finish within its deadline of {seconds:g} s "
                         "(level_deadline_s, --level-deadline)")
        self.concurrency = concurrency


async def sweep(session: Session, progress: Progress, keep: Callable[[SweepData], None] | None = None,
                level_deadline_s: float | None = None) -> SweepData:
    """The whole sweep. `keep` gets the SweepData as soon as it exists and sees runs appended as they
    finish, so a caller interrupted mid-sweep (Ctrl-C, a failure, a level deadline) still has them.
    `level_deadline_s` bounds each concurrency level, all its runs (a run-time option, not part of
    the matrix's workload: it changes when a run stops, not what it measures)."""
    profile = session.profile
    progress.start("calibrating prompt length", 1)
    cal = await calibrate(profile.prompt_tokens, profile.seed, lambda p: _measure_prompt(session, p))
    progress.advance(False)
    progress.finish()
    counter = iter(range(1, 10**9))

    def prompts(n: int) -> list[str]:
        return [prompt_text(profile.seed, next(counter), cal.words) for _ in range(n)]

    warmup_failed = 0
    if profile.warmup_requests:
        progress.start("warmup", profile.warmup_requests)
        warm = await fire(session, prompts(profile.warmup_requests), min(profile.warmup_requests, max(profile.concurrency)),
                          None, profile.seed, lambda ex: progress.advance(ex.error_kind is not None))
        warmup_failed = sum(1 for ex in warm if not to_result(ex, session.api).ok)
        progress.finish()
    data = SweepData(calibration=cal, warmup_failed=warmup_failed)
    if keep is not None:
        keep(data)
    for c in profile.concurrency:
        level_end = time.monotonic() + level_deadline_s if level_deadline_s else None
        for run in range(1, profile.repeats + 1):
            n = profile.requests_for(c)
            progress.start(f"concurrency {c}" + (f" run {run}/{profile.repeats}" if profile.repeats > 1 else ""), n)
            sent = fire(session, prompts(n), c, profile.request_rate, profile.seed + run,
                        lambda ex: progress.advance(ex.error_kind is not None))
            try:
                exchanges = await (sent if level_end is None
                                   else asyncio.wait_for(sent, max(level_end - time.monotonic(), 0.001)))
            except TimeoutError:
                raise LevelDeadline(c, level_deadline_s or 0) from None
            progress.finish()
            data.runs.append(RunData(c, run, [to_result(ex, session.api) for ex in exchanges]))
    return data
