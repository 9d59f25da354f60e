"""The real (consumer, provider) pairs of the prediction = reality table.

Each pair is a wheel a user can end up with beside a torch they can end up with: the consumer's own
torch (it must load: no false rejects), the next minors (the C++ ABI moves), and a CUDA 13 torch
under a CUDA 12 consumer. `declared` says whether the consumer's own Requires-Dist allows that torch
(read from the wheel, not assumed), so the table shows where pins and binaries disagree.
`ci` marks the subset CI runs: every CI pair shares torch 2.14.1, so CI downloads one CUDA stack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pair:
    consumer: str
    consumer_version: str
    provider: str
    provider_version: str
    why: str
    ci: bool = False

    @property
    def key(self) -> str:
        return f"{self.consumer}-{self.consumer_version}+{self.provider}-{self.provider_version}"


PAIRS: tuple[Pair, ...] = (
    Pair("torchvision", "0.28.0", "torch", "2.13.0", "built for it"),
    Pair("torchvision", "0.28.0", "torch", "2.14.1", "next torch minor", ci=True),
    Pair("torchvision", "0.29.0", "torch", "2.14.1", "built for it", ci=True),
    Pair("torchvision", "0.29.0", "torch", "2.13.0", "previous torch minor"),
    Pair("torchvision", "0.25.0", "torch", "2.10.0", "built for it"),
    Pair("torchvision", "0.25.0", "torch", "2.14.1", "CUDA 12 build beside a CUDA 13 torch"),
    Pair("torchaudio", "2.10.0", "torch", "2.10.0", "built for it"),
    Pair("torchaudio", "2.10.0", "torch", "2.14.1", "CUDA 12 build beside a CUDA 13 torch", ci=True),
    Pair("torchaudio", "2.11.1", "torch", "2.14.1", "stable ABI, three minors later", ci=True),
    Pair("torchaudio", "2.11.0", "torch", "2.13.0", "stable ABI, two minors later"),
    Pair("xformers", "0.0.35", "torch", "2.10.0", "built for it"),
    Pair("xformers", "0.0.35", "torch", "2.14.1", "CUDA 12 build beside a CUDA 13 torch"),
    Pair("vllm", "0.19.1", "torch", "2.10.0", "built for it"),
    Pair("vllm", "0.19.1", "torch", "2.14.1", "CUDA 12 build beside a CUDA 13 torch"),
)


def ci_pairs() -> tuple[Pair, ...]:
    return tuple(p for p in PAIRS if p.ci)
