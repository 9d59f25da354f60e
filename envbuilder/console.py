"""The one place consoles are made: wrap for people at a terminal, never for pipes and files.

rich wraps at 80 columns when stdout is not a terminal, so `envbuilder ... | grep` and CI logs got
sentences and table cells cut mid-word. Output that is not a terminal is written unwrapped
(soft wrap, and a width no table row reaches), so each logical line stays one line.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

#: Width given to rich when the output is not a terminal: wide enough that no row is folded.
UNWRAPPED_WIDTH = 100_000


def make_console(*, stderr: bool = False, **kw: Any) -> Console:
    kw.setdefault("highlight", False)
    console = Console(stderr=stderr, **kw)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, **{**kw, "soft_wrap": True, "width": UNWRAPPED_WIDTH})
