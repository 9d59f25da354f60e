"""Readable C++ names for findings, through the C++ runtime's own demangler (cxxfilt).

Why cxxfilt: it calls `__cxa_demangle` from the system's libstdc++, the demangler the toolchain
itself uses, so every name a compiler can produce reads back exactly; a name it cannot demangle
is shown mangled, never guessed.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=65536)
def demangle(name: str) -> str:
    if not name.startswith("_Z"):
        return name
    try:
        import cxxfilt

        return cxxfilt.demangle(name, external_only=False)
    except Exception:  # cxxfilt.InvalidName, or no libstdc++ to load: keep the mangled name
        return name
