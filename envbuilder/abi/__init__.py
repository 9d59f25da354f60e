"""ABI facets, rules and binary inspection: what compiled code needs and which GPUs it runs on.

`AbiHook` is the one entry point the resolver and the gate use; submodules are imported lazily
so `envbuilder inspect` does not pay for the knowledge base and the rules.
"""

from __future__ import annotations

__all__ = ["AbiHook", "Finding", "GpuArch"]


def __getattr__(name: str):
    if name == "AbiHook":
        from envbuilder.abi.hook import AbiHook

        return AbiHook
    if name == "Finding":
        from envbuilder.abi.rules import Finding

        return Finding
    if name == "GpuArch":
        from envbuilder.abi.facets import GpuArch

        return GpuArch
    raise AttributeError(name)
