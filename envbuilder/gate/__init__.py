"""Gate: compare a base lock with a head lock, recompute the head's ABI facets, apply the rules,
and say pass, warn or reject (`envbuilder gate`; CI runs it on every PR touching locks)."""

from envbuilder.gate.model import GateResult
from envbuilder.gate.service import GateOptions, gate_files, gate_ref, judge

__all__ = ["GateOptions", "GateResult", "gate_files", "gate_ref", "judge"]
