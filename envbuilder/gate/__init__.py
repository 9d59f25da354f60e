"""Gate: compare a base lock with a head lock, run every check (ABI rules with recomputed facets,
knowledge changes, artifact hashes against the base and the index, toolchain, recipes, serve
profile) and say pass, warn or reject (`envbuilder gate`; CI runs it on every PR touching locks)."""

from envbuilder.gate.context import GateContext, GateOptions
from envbuilder.gate.model import GateResult
from envbuilder.gate.service import gate_files, gate_ref, judge

__all__ = ["GateContext", "GateOptions", "GateResult", "gate_files", "gate_ref", "judge"]
