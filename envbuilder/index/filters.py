"""Filename filters that drop files a target can never install, before they cost anything.

A project page lists wheels for every platform (pydantic-core: ~15,000 files); a Linux x86_64
target can use about a third of them. Filtering by the wheel's platform tag is a string test,
so it runs before a FileInfo is even built, once per distinct platform field; the page cache
groups files by that field, so a filtered read decodes only the groups it keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def wheel_platform_filter(machine: str, prefixes: Iterable[str] = ("manylinux", "linux")) -> Callable[[str], bool]:
    """A `keep` for IndexClient: pure wheels and wheels with a platform tag `<prefix>..._<machine>`.

    It receives a wheel's platform tag field ("manylinux_2_17_x86_64.manylinux2014_x86_64");
    sdists never reach it (they are always kept). `wheel_platform_filter("x86_64")` suits glibc
    Linux x86_64 targets (musllinux excluded).
    """
    starts = tuple(prefixes)
    suffix = "_" + machine

    def keep(platforms: str) -> bool:
        return any(p == "any" or (p.startswith(starts) and p.endswith(suffix)) for p in platforms.split("."))

    return keep
