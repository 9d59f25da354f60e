"""Real ELF files compiled with g++ and packed into wheels, for the linker-model tests.

`fakec10` stands for torch: `fakec10/lib/libc10.so` at 1.0 exports `c10::add(int)`, at 2.0
`c10::add(long)` (a signature change like a torch minor makes); `fakec10/_C.so` is its extension,
finding the library through RPATH $ORIGIN/lib. `ext` is built against 1.0: it lists `libc10.so` in
DT_NEEDED with no RPATH, so it finds it only because importing fakec10 loaded it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.dists import BuiltDist, make_wheel

TAGS = "cp312-cp312-manylinux_2_28_x86_64"
C10 = {"1.0": 'namespace c10 { int add(int x) { return x + 1; } int keep() { return 7; } }\n',
       "2.0": 'namespace c10 { long add(long x) { return x + 2; } int keep() { return 7; } }\n'}
PROVIDER_MODULE = 'namespace c10 { int keep(); }\nextern "C" void* PyInit__C() { return (void*)(long)c10::keep(); }\n'
EXTENSION = 'namespace c10 { int add(int x); }\nextern "C" void* PyInit__ext() { return (void*)(long)c10::add(1); }\n'
CUDART = 'extern "C" int cudaGetDeviceCount(int* n) { *n = 0; return 0; }\n'
CUDA_CONSUMER = 'extern "C" int cudaGetDeviceCount(int*);\nextern "C" void* PyInit__k() { int n; cudaGetDeviceCount(&n); return 0; }\n'


def gxx(out: Path, source: str, *args: str) -> bytes:
    """Compile `source` into the shared object `out` with g++; returns its bytes."""
    src = out.with_suffix(".cc")
    src.write_text(source)
    done = subprocess.run(["g++", "-shared", "-fPIC", "-O1", "-o", str(out), str(src), *args],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def fake_torch(build: Path, version: str) -> BuiltDist:
    folder = build / f"c10-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    lib = gxx(folder / "libc10.so", C10[version], "-Wl,-soname,libc10.so")
    module = gxx(folder / "_C.so", PROVIDER_MODULE, f"-L{folder}", "-lc10", "-Wl,-rpath,$ORIGIN/lib")
    return make_wheel("fakec10", version, tags=TAGS, files={
        "fakec10/__init__.py": b"", "fakec10/lib/libc10.so": lib, "fakec10/_C.so": module})


def extension(build: Path, name: str = "ext", version: str = "1.0", against: str = "1.0",
              requires: tuple[str, ...] = ("fakec10",)) -> BuiltDist:
    """An extension built against fakec10 `against` (which must have been built in `build`)."""
    module = gxx(build / f"{name}-{version}-_ext.so", EXTENSION, f"-L{build / f'c10-{against}'}", "-lc10")
    return make_wheel(name, version, requires_dist=list(requires), tags=TAGS,
                      files={f"{name}/__init__.py": b"", f"{name}/_ext.so": module})
