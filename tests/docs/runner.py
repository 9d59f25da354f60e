"""Run the shell sessions written in README.md and docs/*.md, and compare what they print.

A session is a fenced block with lines starting `$ `; the lines after a command, up to the next
command, are what it printed. Each document runs in its own fresh copy of the project (the tracked
files, committed into a new git repository so `--base-ref HEAD` works), block after block, every
command of a block in one bash session so files a block makes are there for its later lines.

Outputs are compared line by line after masking what changes from run to run and machine to
machine (times, digests, sizes, dates, the copy's path); a `...` line stands for any lines.
A comment right before a block says how to check it when it cannot run here:
`<!-- doc-test: skip REASON -->`, or `<!-- doc-test: replay inspect FIXTURE.json -->` (render an
inspect report recorded on other hardware with the current renderer).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))

_FENCE = re.compile(r"^```")
_DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->")
MASKS = [
    (re.compile(r"(/[\w.+-]+)+/(?=(locks|matrices|tests|docs)/)"), "<dir>/"),
    (re.compile(r"\b\d{8}T\d{6}Z\b"), "<date>"),
    (re.compile(r"\b\d{4}-\d{2}(-\d{2}(T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})?)?)?\b"), "<date>"),
    (re.compile(r"sha256[: ]?[0-9a-f]{6,}…?"), "sha256:<digest>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b…?"), "<digest>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(B|kB|KB|KiB|MB|MiB|GB|GiB)\b"), "<size>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(s|ms)\b"), "<time>"),
]


@dataclass
class Command:
    line: int
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    doc: str
    line: int
    commands: list[Command]
    directive: tuple[str, str] | None = None

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> list[Block]:
    lines = (ROOT / doc).read_text().splitlines()
    out, i, directive = [], 0, None
    while i < len(lines):
        match = _DIRECTIVE.search(lines[i])
        if match:
            directive = (match.group(1), match.group(2))
        if _FENCE.match(lines[i]):
            start, body, i = i + 1, [], i + 1
            while i < len(lines) and not _FENCE.match(lines[i]):
                body.append((i + 1, lines[i]))
                i += 1
            commands: list[Command] = []
            continued = False
            for number, text in body:
                if continued:
                    commands[-1].text += "\n" + text
                    continued = text.endswith("\\")
                elif text.startswith("$ "):
                    commands.append(Command(number, text[2:]))
                    continued = text.endswith("\\")
                elif commands:
                    commands[-1].expected.append(text)
            if commands:
                out.append(Block(doc, start, commands, directive))
            directive = None
        elif lines[i].strip() and not match:
            directive = None if not lines[i].startswith("<!--") else directive
        i += 1
    return out


def mask(line: str) -> str:
    line = line.rstrip()
    for pattern, repl in MASKS:
        line = pattern.sub(repl, line)
    return line


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line by line after masking; an expected `...` stands for any number of actual lines."""
    want = [mask(x) for x in expected]
    got = [mask(x) for x in actual]
    while got and not got[-1]:
        got.pop()
    while want and not want[-1]:
        want.pop()

    def go(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i].strip() == "...":
            return any(go(i + 1, k) for k in range(j, len(got) + 1))
        return j < len(got) and want[i] == got[j] and go(i + 1, j + 1)

    return go(0, 0)


def fresh_copy(dest: Path) -> Path:
    """The project's tracked files in a new git repository: what a user gets from a clone."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, files.stdout.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    git = ["git", "-c", "user.name=doc", "-c", "user.email=doc@example.invalid"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fresh copy"]):
        subprocess.run([*git, *args], cwd=dest, check=True, capture_output=True)
    return dest


RC = re.compile(r"\s{2,}\(exit (\d+)\)$")


def run_block(block: Block, cwd: Path, env: dict[str, str], timeout: float = 900) -> list[tuple[list[str], int]]:
    """Every command of the block in one bash session; each command's output lines and exit status."""
    marker = "@@doc-test-output@@"
    script = ["set +e", "__rc=0"]
    for command in block.commands:
        script.append(f"printf '%s\\n' '{marker}'; (exit $__rc); {{ {command.text}\n}} 2>&1; __rc=$?; "
                      f"printf '\\n@@rc=%d\\n' $__rc")
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    out = []
    for part in (done.stdout + done.stderr).split(marker + "\n")[1:]:
        body, _, rc = part.rpartition("\n@@rc=")
        out.append((body.splitlines(), int(rc.strip() or 0)))
    return out


def expected_rc(expected: list[str]) -> tuple[list[str], int | None]:
    """An output shown with `(exit N)` at the end of its last line: that line without it, and N."""
    if expected:
        match = RC.search(expected[-1])
        if match:
            return [*expected[:-1], expected[-1][:match.start()]], int(match.group(1))
    return expected, None


def environment(venv_bin: Path) -> dict[str, str]:
    """The user's environment with this venv's tools first (envbuilder, and cuobjdump from nvidia-cuda-cuobjdump)."""
    import sysconfig

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENVBUILDER_ROOT", "COLUMNS", "PYTEST"))}
    tools = [str(venv_bin), *sorted(glob.glob(sysconfig.get_paths()["purelib"] + "/nvidia/*/bin"))]
    env["PATH"] = os.pathsep.join([*tools, env.get("PATH", "")])
    return env
