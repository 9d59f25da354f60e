"""Deterministic prompts of a set length in the *server's* tokens, made locally.

No dataset download and no local tokenizer: prompt i is a seeded stream of common English words
(distinct per request, so prefix caches cannot serve one request from another), and the word count
is calibrated once against the server's own `usage.prompt_tokens` (which includes any chat
template). Every request's actual prompt length is still taken from its usage when reported.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have "
    "an they you were her she there one all we their been has would when if so no will more what up out "
    "time can only some could new them these two may first then do any like my now over such our man me "
    "even most made after also did many before must through back years where much your way well down "
    "should because each just those people how too little state good very make world still own see men "
    "work long get here between both life being under never day same another know while last might us "
    "great old year off come since against go came right used take three model token server request "
    "stream latency throughput benchmark client completion chat prompt response hello world test data"
).split()


def prompt_text(seed: int, index: int, words: int) -> str:
    """Prompt `index` of a run: the same text for the same (seed, index, words), everywhere."""
    rng = random.Random(seed * 1_000_003 + index)
    return " ".join(rng.choice(_WORDS) for _ in range(max(words, 1)))


@dataclass(frozen=True)
class Calibration:
    words: int
    measured_tokens: int | None  # what the server counted for prompt 0 at `words`
    exact: bool  # the server reported usage, so `words` was fitted to it
    probes: int


Measure = Callable[[str], Awaitable[int | None]]


async def calibrate(target: int, seed: int, measure: Measure, *, max_probes: int = 8) -> Calibration:
    """Fit the word count so prompt 0 is `target` tokens as the server counts them (secant steps)."""
    words = target
    best: tuple[int, int] | None = None
    seen: dict[int, int] = {}
    for probe in range(1, max_probes + 1):
        tokens = await measure(prompt_text(seed, 0, words))
        if tokens is None:
            return Calibration(words=words, measured_tokens=None, exact=False, probes=probe)
        seen[words] = tokens
        if best is None or abs(tokens - target) < abs(best[1] - target):
            best = (words, tokens)
        if tokens == target:
            break
        overhead_free = max(tokens - _overhead(seen), 1)
        per_word = overhead_free / words
        step = round((target - tokens) / max(per_word, 1e-3)) or (1 if tokens < target else -1)
        nxt = max(1, words + step)
        if nxt in seen or nxt == words:
            break
        words = nxt
    assert best is not None
    return Calibration(words=best[0], measured_tokens=best[1], exact=True, probes=len(seen))


def _overhead(seen: dict[int, int]) -> int:
    """Tokens that do not come from words (chat template, BOS): intercept of the two latest probes."""
    if len(seen) < 2:
        return 0
    (w1, t1), (w2, t2) = list(seen.items())[-2:]
    if w1 == w2:
        return 0
    slope = (t2 - t1) / (w2 - w1)
    return max(0, round(t1 - slope * w1))
