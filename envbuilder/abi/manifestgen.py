"""Generate a system manifest from a real base image: every library, its symbol versions and symbols.

    python -m envbuilder.abi.manifestgen debian:bookworm-slim debian-12-slim > envbuilder/knowledge/systems/debian-12-slim.yaml

Why from the image: public tables list symbol *versions*; the image itself also says which
libraries exist and every symbol each one exports, so an unversioned import (libc's `dlclose`
from a library linked without libdl) is checked, not assumed. Needs docker; the libraries are
copied out of a throw-away container and read with the same ELF reader as wheels.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from envbuilder.abi.elf import NotElf
from envbuilder.abi.linkage import summarize_elf

_FAMILY = re.compile(r"^([A-Z][A-Z_]*?)_([0-9][0-9.]*)$")
_LIBDIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64")


def _version_key(text: str) -> tuple:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def manifest_from(folder: Path, system_id: str, source: str, images: list[str]) -> dict:
    """The manifest for the shared objects copied into `folder` (symlinks already resolved)."""
    libraries: dict[str, dict] = {}
    versions: dict[str, set[str]] = {}
    glibc = "0"
    for path in sorted(folder.iterdir()):
        if not path.is_file() or ".so" not in path.name:
            continue
        try:
            with path.open("rb") as stream:
                elf = summarize_elf(stream, path.name, "0" * 64, path.stat().st_size)
        except (NotElf, OSError):
            continue
        soname = elf.soname or path.name
        if soname in libraries:
            continue
        families = set()
        for name in elf.version_defs:
            match = _FAMILY.match(name)
            if match:
                families.add(match.group(1))
                versions.setdefault(match.group(1), set()).add(match.group(2))
                if match.group(1) == "GLIBC" and soname == "libc.so.6":
                    glibc = max(glibc, match.group(2), key=_version_key)
        libraries[soname] = {"families": sorted(families), "defined": elf.defined}
    return {"id": system_id, "source": source, "images": images, "glibc": glibc,
            "libraries": dict(sorted(libraries.items())),
            "versions": {k: sorted(v, key=_version_key) for k, v in sorted(versions.items())}}


def copy_libraries(image: str, out: Path, docker: str = "docker") -> str:
    """Copy the image's shared objects into `out`; returns the image's id (its content digest)."""
    script = "for d in " + " ".join(_LIBDIRS) + "; do [ -d $d ] && cp -L $d/*.so* /out/ 2>/dev/null; done; true"
    subprocess.run([docker, "run", "--rm", "--network=none", "-v", f"{out}:/out", image, "sh", "-c", script],
                   check=True, capture_output=True)
    inspect = subprocess.run([docker, "image", "inspect", "--format", "{{.Id}}", image],
                             check=True, capture_output=True, text=True)
    return inspect.stdout.strip()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    image, system_id = argv
    with tempfile.TemporaryDirectory() as tmp:
        image_id = copy_libraries(image, Path(tmp))
        data = manifest_from(Path(tmp), system_id, f"generated from the image {image} ({image_id}) "
                             "by python -m envbuilder.abi.manifestgen (docs/abi.md)", [image])
    print(f"# System libraries of {image}, read from the image itself (every exported symbol as digests).")
    print(json.dumps(data, indent=1))  # JSON is YAML; one library per line keeps diffs readable
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
