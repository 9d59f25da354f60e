"""Which Pythons this host has: the one running envbuilder and each `python3.N` on PATH.

A target names its Python (`platform.python`); the image brings that interpreter itself, but
installing an export on the host (`pip install -r requirements.lock.txt`) needs a matching one.
Only names are looked up, nothing is run: probing must stay cheap and side-effect free.
"""

from __future__ import annotations

import platform

from envbuilder.doctor.model import PythonFacts
from envbuilder.doctor.sources import HostSources

MINORS = range(8, 16)


def probe_python(sources: HostSources) -> PythonFacts:
    found = tuple((f"3.{n}", path) for n in MINORS if (path := sources.which(f"python3.{n}")))
    return PythonFacts(running=platform.python_version(), on_path=found)
