"""Find the matrix line a bump edits, and apply the edit so that a failed re-lock leaves nothing behind.

Why the edit must be in the target's own file: a value inherited through `extends:` lives in a
file other targets share, and moving it there would move them too without re-locking them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from envbuilder.bump.yamledit import ScalarEdit, locate
from envbuilder.errors import BadInput
from envbuilder.lock.io import write_atomic
from envbuilder.matrix import Target


def scalar_edit(target: Target, keys: tuple[str, ...], new: str) -> ScalarEdit:
    """The edit of the value at `keys` (as the matrix loader recorded its origin) to `new`."""
    origin = target.origins.get(keys)
    if origin is None:
        raise BadInput(f"{target.source_path}: key '{'.'.join(keys)}' is not set; a bump edits a value the matrix gives")
    file = Path(origin.file)
    if file.resolve() != Path(target.source_path).resolve():
        raise BadInput(f"{origin}: key '{'.'.join(keys)}' of target {target.name!r} comes from {file.name} through "
                       f"`extends:`; bump the target that owns it, or override the package in {target.source_path}")
    text = file.read_text(encoding="utf-8")
    line, start, end = locate(text, keys, file)
    old = text.splitlines()[line][start:end].strip("'\"")
    return ScalarEdit(file, keys, old, new, line + 1)


@contextmanager
def applied(edit: ScalarEdit | None) -> Iterator[None]:
    """The edit written atomically for the block; put back byte for byte if the block raises."""
    if edit is None:
        yield
        return
    before = edit.file.read_text(encoding="utf-8")
    write_atomic(edit.file, edit.apply(before))
    try:
        yield
    except BaseException:
        write_atomic(edit.file, before)
        raise
