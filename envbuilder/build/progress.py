"""BuildKit's `--progress=plain` output as steps: which ran, which were cached, which failed.

The plain format prefixes every line with `#<id>`; the first line of a step names it
(`#12 [build-x 3/4] RUN ...`), then come its output lines and one of `CACHED`, `DONE 1.2s` or
`ERROR: ...`. Tests assert cache hits from this, and a failed build shows the failing step's tail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LINE = re.compile(r"^#(\d+) (.*)$")
_NAME = re.compile(r"^\[(?P<stage>[^\]]*?)(?: \d+/\d+)?\] (?P<instr>.*)$")
_TIMED = re.compile(r"^\d+\.\d+ (.*)$")


@dataclass
class Step:
    id: int
    name: str = ""
    cached: bool = False
    done: bool = False
    error: str | None = None
    output: list[str] = field(default_factory=list)

    @property
    def stage(self) -> str:
        match = _NAME.match(self.name)
        return match["stage"] if match else ""

    @property
    def instruction(self) -> str:
        match = _NAME.match(self.name)
        return match["instr"] if match else self.name


class Progress:
    """Feed lines in as they stream; query the steps at any time."""

    def __init__(self) -> None:
        self.steps: dict[int, Step] = {}

    def feed(self, line: str) -> None:
        match = _LINE.match(line.rstrip("\n"))
        if not match:
            return
        step_id, rest = int(match[1]), match[2]
        step = self.steps.setdefault(step_id, Step(step_id))
        if not step.name and rest.startswith("["):
            step.name = rest
        elif rest == "CACHED":
            step.cached = True
        elif rest.startswith("DONE"):
            step.done = True
        elif rest.startswith("ERROR"):
            step.error = rest.removeprefix("ERROR:").strip()
        elif not rest.startswith("sha256:"):
            timed = _TIMED.match(rest)
            step.output.append(timed[1] if timed else rest)

    def stage_steps(self, stage: str) -> list[Step]:
        return [s for s in self.steps.values() if s.stage == stage]

    def failed(self) -> Step | None:
        return next((s for s in self.steps.values() if s.error is not None and s.name), None)

    def failure_report(self, lines: int = 40) -> str:
        step = self.failed()
        if step is None:
            return ""
        tail = "\n".join(f"  {line}" for line in step.output[-lines:])
        return f"step {step.name} failed: {step.error}\n{tail}"
