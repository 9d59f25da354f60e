"""Reality side of the ABI table: load every ELF file of one installed distribution the way the
dynamic loader will when the package is used, and report what the loader said.

Runs INSIDE the clean container with the venv's python and the standard library only (the image has
nothing else). Not `import X`: torchvision raises the same ImportError for a symbol break and a
library break, and xformers imports fine while its `_C.so` cannot load. Instead:

1. import the providers (`import torch`), as the package's own `__init__` does first;
2. `dlopen(RTLD_NOW | RTLD_LOCAL)` every ELF of the distribution (its RECORD) in one process,
   libraries that other files of the same distribution name in DT_NEEDED first (the package's
   loaders open their own `lib*.so` before the extension that needs it, which then finds it by
   SONAME), carrying on after a failure (a failed dlopen leaves nothing loaded) so every file is
   tried; a file that fails only because a sibling it needs failed first is marked `blocked_by`;
3. record dlerror() verbatim, the object the loader was working on when it failed (for a missing
   library the loader's own `LD_DEBUG=files` "needed by" line, because dlerror() does not say), and,
   for a load that worked, the path each DT_NEEDED entry resolved to (`dlopen(RTLD_NOLOAD)` +
   `dlinfo(RTLD_DI_LINKMAP)`: the object the loader really bound, not a guess from search rules).

Prints one JSON document on stdout.
"""

from __future__ import annotations

import ctypes
import importlib
import importlib.metadata
import json
import os
import re
import struct
import sys
import sysconfig

RTLD_NOW = 0x2
RTLD_NOLOAD = 0x4
RTLD_DI_LINKMAP = 2
DT_NEEDED, DT_STRTAB, DT_SONAME = 1, 5, 14
PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3


def elf_dynamic(path: str) -> dict | None:
    """SONAME, DT_NEEDED and whether the file is loadable, from the ELF64 little-endian headers."""
    with open(path, "rb") as fh:
        data = fh.read(64)
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return None
        e_type = struct.unpack_from("<H", data, 16)[0]
        phoff, = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        fh.seek(phoff)
        phdrs = [struct.unpack("<IIQQQQQQ", fh.read(phentsize)[:56]) for _ in range(phnum)]
        loads = [p for p in phdrs if p[0] == PT_LOAD]
        dyn = next((p for p in phdrs if p[0] == PT_DYNAMIC), None)
        interp = any(p[0] == PT_INTERP for p in phdrs)
        info = {"type": e_type, "interp": interp, "soname": None, "needed": []}
        if dyn is None:
            return info
        fh.seek(dyn[2])
        raw = fh.read(dyn[5])
        entries = [struct.unpack_from("<qQ", raw, i) for i in range(0, len(raw) - 15, 16)]

        def offset(vaddr: int) -> int:
            for _, _, off, va, _, filesz, _, _ in loads:
                if va <= vaddr < va + filesz:
                    return vaddr - va + off
            raise ValueError("address outside every PT_LOAD")

        strtab = offset(next(v for t, v in entries if t == DT_STRTAB))

        def string(index: int) -> str:
            fh.seek(strtab + index)
            out = b""
            while b"\0" not in out:
                chunk = fh.read(256)
                if not chunk:
                    break
                out += chunk
            return out.split(b"\0", 1)[0].decode()

        for tag, value in entries:
            if tag == DT_NEEDED:
                info["needed"].append(string(value))
            elif tag == DT_SONAME:
                info["soname"] = string(value)
            elif tag == 0:
                break
        return info


class LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]


def loaded_path(name: str) -> str | None:
    """Path of the loaded object whose SONAME (or name) is `name`, or None if nothing loaded has it."""
    libc = ctypes.CDLL(None)
    libc.dlopen.restype = ctypes.c_void_p
    libc.dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    handle = libc.dlopen(name.encode(), RTLD_NOW | RTLD_NOLOAD)
    if not handle:
        return None
    lm = ctypes.POINTER(LinkMap)()
    libc.dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    libc.dlinfo(ctypes.c_void_p(handle), RTLD_DI_LINKMAP, ctypes.byref(lm))
    path = lm.contents.l_name.decode() if lm and lm.contents.l_name else None
    libc.dlclose.argtypes = [ctypes.c_void_p]
    libc.dlclose(ctypes.c_void_p(handle))
    return path


def mapped_objects() -> list[str]:
    seen: list[str] = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            parts = line.split(None, 5)
            if len(parts) == 6 and ".so" in parts[5] and parts[5].strip() not in seen:
                seen.append(parts[5].strip())
    return seen


def distribution_elves(dist_name: str, site: str) -> list[tuple[str, dict]]:
    dist = importlib.metadata.distribution(dist_name)
    out = []
    for f in dist.files or []:
        path = os.path.join(site, str(f))
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        info = elf_dynamic(path)
        if info is not None:
            out.append((str(f), info))
    return out


def load_order(elves: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Files other files of the same distribution need come first (depth-first on DT_NEEDED), the
    vendored libraries last."""
    by_name = {}
    for rel, info in elves:
        by_name[os.path.basename(rel)] = (rel, info)
        if info["soname"]:
            by_name[info["soname"]] = (rel, info)
    ordered: list[tuple[str, dict]] = []
    state: dict[str, bool] = {}

    def visit(rel: str, info: dict) -> None:
        if rel in state:
            return
        state[rel] = False
        for name in info["needed"]:
            if name in by_name and not vendored(by_name[name][0]):
                visit(*by_name[name])
        state[rel] = True
        ordered.append((rel, info))

    # auditwheel's <pkg>.libs/ copies are reached only through an RPATH, never opened by the package:
    # opening them first would put their SONAME (libcudart.so.12...) in scope for every later file
    for rel, info in sorted(elves, key=lambda e: (vendored(e[0]), e[0])):
        visit(rel, info)
    return ordered


def vendored(rel: str) -> bool:
    return rel.split("/", 1)[0].endswith(".libs")


UNDEFINED = re.compile(r"^(?P<obj>.+?): undefined symbol: (?P<symbol>\S+)")
VERSION = re.compile(r"^(?P<lib>.+?): version `(?P<version>[^']+)' not found \(required by (?P<obj>.+)\)")
NO_FILE = re.compile(r"^(?P<lib>[^:]+): cannot open shared object file")
NEEDED_BY = re.compile(r"file=(?P<lib>\S+) \[\d+\];\s+needed by (?P<obj>\S+) \[\d+\]")


def classify(error: str, debug_log: str, site: str) -> dict:
    def rel(path: str) -> str:
        return os.path.relpath(path, site) if path.startswith(site + os.sep) else path

    if m := UNDEFINED.match(error):
        return {"kind": "undefined-symbol", "object": rel(m["obj"]), "symbol": m["symbol"]}
    if m := VERSION.match(error):
        return {"kind": "symbol-version", "object": rel(m["obj"]), "library": m["lib"], "symbol_version": m["version"]}
    if m := NO_FILE.match(error):
        requesters = [n["obj"] for n in NEEDED_BY.finditer(debug_log) if n["lib"] == m["lib"]]
        return {"kind": "missing-library", "object": rel(requesters[-1]) if requesters else None, "library": m["lib"]}
    return {"kind": "other"}


def debug_log_since(offset: int) -> tuple[str, int]:
    """What the loader wrote to its LD_DEBUG_OUTPUT file (this process's) since `offset`."""
    path = f"{os.environ['LD_DEBUG_OUTPUT']}.{os.getpid()}"
    try:
        with open(path, errors="replace") as fh:
            fh.seek(offset)
            text = fh.read()
            return text, fh.tell()
    except FileNotFoundError:
        return "", offset


def load(path: str) -> tuple[bool, str]:
    try:
        ctypes.CDLL(path, mode=os.RTLD_LOCAL)  # ctypes adds RTLD_NOW
    except OSError as exc:
        return False, str(exc)
    return True, ""


def main() -> None:
    if os.environ.get("LD_DEBUG") != "files":
        # the loader reads LD_DEBUG at start-up only: start again with it (and nothing from the caller)
        env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
        env.update(LD_DEBUG="files", LD_DEBUG_OUTPUT="/tmp/probe-ld-debug")
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    dist_name = sys.argv[1]
    providers = [p for p in sys.argv[2].split(",") if p]
    site = sysconfig.get_paths()["purelib"]
    report: dict = {
        "distribution": dist_name,
        "version": importlib.metadata.version(dist_name),
        "providers": {},
        "python": sys.version.split()[0],
        "libc": os.confstr("CS_GNU_LIBC_VERSION"),
        "loads": [],
    }
    for mod in providers:
        importlib.import_module(mod)
        report["providers"][mod] = importlib.metadata.version(mod)
    report["provider_objects"] = mapped_objects()
    _, offset = debug_log_since(0)
    failed: dict[str, str] = {}  # basename and SONAME of each file that did not load -> its path
    for rel, info in load_order(distribution_elves(dist_name, site)):
        if info["type"] != 3 or info["interp"]:  # executables are run, not loaded
            report["loads"].append({"file": rel, "skipped": "executable"})
            continue
        path = os.path.join(site, rel)
        ok, error = load(path)
        log, offset = debug_log_since(offset)
        result: dict = {"file": rel, "ok": ok}
        if ok:
            result["resolved"] = {name: loaded_path(name) for name in info["needed"]}
        else:
            result["error"] = error
            result.update(classify(error, log, site))
            if result.get("library") in failed:
                # the package's own loader stopped at that file already: a consequence, not a finding
                result["blocked_by"] = failed[result["library"]]
            failed[os.path.basename(rel)] = rel
            if info["soname"]:
                failed[info["soname"]] = rel
        report["loads"].append(result)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
