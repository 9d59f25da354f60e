"""The target environment: marker values and wheel tags of the machine the lock is *for*.

A lock made on a laptop for an 8-GPU Linux box must see that box: Python 3.12, glibc 2.39,
x86_64. Nothing here looks at the host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from packaging import tags
from packaging.markers import Marker
from packaging.tags import Tag

from envbuilder.matrix.schema import Platform

# Legacy manylinux names and the glibc they stand for (PEP 599, PEP 571, PEP 513).
LEGACY_MANYLINUX = {(2, 17): "manylinux2014", (2, 12): "manylinux2010", (2, 5): "manylinux1"}
OLDEST_GLIBC_MINOR = 5
_MANYLINUX = re.compile(r"^manylinux_(\d+)_(\d+)_(\w+)$")
_LEGACY_GLIBC = {f"{name}_": glibc for glibc, name in LEGACY_MANYLINUX.items()}


@dataclass(frozen=True)
class TargetEnvironment:
    platform: Platform

    @property
    def python(self) -> tuple[int, int]:
        major, minor = self.platform.python.split(".")
        return int(major), int(minor)

    @cached_property
    def markers(self) -> dict[str, str]:
        machine = self.platform.machine
        return {
            "implementation_name": "cpython",
            "implementation_version": f"{self.platform.python}.0",
            "os_name": "posix",
            "platform_machine": machine,
            "platform_python_implementation": "CPython",
            "platform_release": "",
            "platform_system": "Linux",
            "platform_version": "",
            "python_full_version": f"{self.platform.python}.0",
            "python_version": self.platform.python,
            "sys_platform": "linux",
        }

    def evaluate(self, marker: Marker | None, extras: frozenset[str] = frozenset()) -> bool:
        if marker is None:
            return True
        env = dict(self.markers)
        if not extras:
            return marker.evaluate({**env, "extra": ""})
        return any(marker.evaluate({**env, "extra": extra}) for extra in extras)

    @cached_property
    def platform_tags(self) -> list[str]:
        """manylinux_2_N for every glibc up to the target's, newest first, then `linux_<arch>`."""
        machine = self.platform.machine
        major, newest = self.platform.glibc
        out = []
        for minor in range(newest, OLDEST_GLIBC_MINOR - 1, -1):
            out.append(f"manylinux_{major}_{minor}_{machine}")
            legacy = LEGACY_MANYLINUX.get((major, minor))
            if legacy:
                out.append(f"{legacy}_{machine}")
        out.append(f"linux_{machine}")
        return out

    @cached_property
    def tag_priority(self) -> dict[Tag, int]:
        """Every tag the target accepts, mapped to its rank (0 = most preferred)."""
        ordered = [
            *tags.cpython_tags(self.python, platforms=self.platform_tags),
            *tags.compatible_tags(self.python, interpreter=f"cp{self.python[0]}{self.python[1]}",
                                  platforms=self.platform_tags),
        ]
        ranks: dict[Tag, int] = {}
        for rank, tag in enumerate(ordered):
            ranks.setdefault(tag, rank)
        return ranks

    def wheel_rank(self, wheel_tags: frozenset[Tag]) -> int | None:
        """The best rank among a wheel's tags, or None when the target cannot install it."""
        ranks = [self.tag_priority[t] for t in wheel_tags if t in self.tag_priority]
        return min(ranks) if ranks else None

    def _glibc_of(self, platform: str) -> tuple[int, int] | None:
        """The glibc a manylinux platform tag needs on this target's machine; None for other platforms."""
        match = _MANYLINUX.match(platform)
        if match:
            return (int(match.group(1)), int(match.group(2))) if match.group(3) == self.platform.machine else None
        for prefix, glibc in _LEGACY_GLIBC.items():
            if platform == prefix + self.platform.machine:
                return glibc
        return None

    def why_no_wheel(self, wheel_tags: list[frozenset[Tag]]) -> str:
        """Why none of these wheels installs on the target, in the matrix's terms (glibc, Python, machine)."""
        every = [t for ts in wheel_tags for t in ts]
        generic = f"linux_{self.platform.machine}"
        python_ok = [t for t in every if Tag(t.interpreter, t.abi, generic) in self.tag_priority
                     or Tag(t.interpreter, t.abi, "any") in self.tag_priority]
        if not python_ok:
            found = ", ".join(sorted({f"{t.interpreter}-{t.abi}" for t in every})[:4])
            return f"its wheels are for {found}, not CPython {self.platform.python} (platform.python)"
        needs = sorted((g, t.platform) for t in python_ok if (g := self._glibc_of(t.platform)) is not None)
        have = self.platform.glibc
        if needs and needs[0][0] > have:
            (major, minor), tag = needs[0]
            return (f"its oldest wheel needs glibc {major}.{minor} ({tag}) and the target has glibc "
                    f"{have[0]}.{have[1]} (platform.libc: {self.platform.libc})")
        machines = sorted({t.platform for t in python_ok})[:4]
        return f"its wheels are for {', '.join(machines)}, none of which the target ({self.platform.machine}, " \
               f"{self.platform.libc}) accepts"
