"""The linker model on real ELF files compiled here with g++, packed into real wheels.

A fake torch (`fakec10`) ships `fakec10/lib/libc10.so` at two versions: 1.0 exports
`c10::add(int)`, 2.0 changed it to `c10::add(long)` (the kind of signature change a torch minor
makes). An extension wheel built against 1.0 imports `c10::add(int)` and lists `libc10.so` in
DT_NEEDED with no RPATH: it finds the library only because importing fakec10 loaded it.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from tests.conftest import needs_tool

from envbuilder.abi import summaries
from envbuilder.abi.linkcheck import check_wheels
from envbuilder.abi.wheelscan import ScanStats, scan_local, scan_remote
from envbuilder.errors import BadInput
from tests.support.dists import make_wheel
from tests.support.index_server import IndexServer
from tests.support.linkwheels import CUDA_CONSUMER, CUDART, TAGS, extension, fake_torch, gxx

pytestmark = needs_tool("g++", shutil.which("g++"), "apt-get install g++")

@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVBUILDER_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    build = tmp_path_factory.mktemp("link-build")
    out = tmp_path_factory.mktemp("link-wheels")
    made = {f"fakec10-{v}": fake_torch(build, v).write(out) for v in ("1.0", "2.0")}
    made["ext"] = extension(build).write(out)
    cudart_dir = build / "cudart"
    cudart_dir.mkdir()
    cudart = gxx(cudart_dir / "libcudart.so.12", CUDART, "-Wl,-soname,libcudart.so.12")
    (cudart_dir / "libcudart.so").symlink_to("libcudart.so.12")
    kernel = gxx(build / "_k.so", CUDA_CONSUMER, f"-L{cudart_dir}", "-lcudart")
    made["kernels"] = make_wheel("kernels", "0.1", tags=TAGS,
                                 files={"kernels/__init__.py": b"", "kernels/_k.so": kernel}).write(out)
    made["runtime-12"] = make_wheel("fake-cuda-runtime", "12.8", tags="py3-none-manylinux_2_28_x86_64", files={
        "fake_cuda_runtime/__init__.py": b"", "nvidia/cuda_runtime/lib/libcudart.so.12": cudart}).write(out)
    made["pure"] = make_wheel("pure", "1.0").write(out)
    return made


def test_extension_links_against_the_provider_it_was_built_for(wheels):
    report = check_wheels([wheels["fakec10-1.0"], wheels["ext"]])
    assert report.errors == []
    assert report.links("ext") and report.packages["ext"].evidence == "binary"


def test_provider_bump_that_drops_a_symbol_is_named_demangled_with_provider_version(wheels):
    report = check_wheels([wheels["fakec10-2.0"], wheels["ext"]])
    assert not report.links("ext")
    [finding] = report.for_package("ext")
    assert finding.kind == "undefined-symbol"
    assert finding.file == "ext/_ext.so"
    assert finding.symbol == "_ZN3c103addEi"
    assert finding.demangled == "c10::add(int)"
    assert (finding.provider, finding.provider_version) == ("fakec10", "2.0")
    assert "c10::add(int)" in finding.message and "fakec10 2.0" in finding.message
    assert report.links("fakec10")


def test_without_the_dependency_edge_the_library_is_not_found(wheels):
    """ext has no RPATH: only `import fakec10` having loaded libc10.so makes it resolvable."""
    report = check_wheels([wheels["fakec10-1.0"], wheels["ext"]], depends={"ext": [], "fakec10": []})
    [finding] = report.for_package("ext")
    assert (finding.kind, finding.library) == ("missing-library", "libc10.so")
    assert "fakec10/lib/libc10.so" not in finding.message and "libc10.so (fakec10 1.0)" in finding.message


def test_a_library_nothing_provides_is_a_missing_library_finding(wheels):
    report = check_wheels([wheels["kernels"]])
    [finding] = report.for_package("kernels")
    assert (finding.kind, finding.file, finding.library) == ("missing-library", "kernels/_k.so", "libcudart.so.12")


def test_a_library_a_dependency_loads_is_found_by_soname(wheels, tmp_path):
    """The cu12 runtime wheel's library is loaded by a module that has it in RPATH (as torch does)."""
    build = tmp_path / "b"
    build.mkdir()
    runtime_dir = build / "rt"
    runtime_dir.mkdir()
    (runtime_dir / "libcudart.so.12").write_bytes(gxx(runtime_dir / "libcudart.so.12", CUDART,
                                                       "-Wl,-soname,libcudart.so.12"))
    loader = gxx(build / "_C.so", 'extern "C" int cudaGetDeviceCount(int*);\n'
                 'extern "C" void* PyInit__C() { int n; cudaGetDeviceCount(&n); return 0; }\n',
                 f"-L{runtime_dir}", "-l:libcudart.so.12", "-Wl,-rpath,$ORIGIN/../nvidia/cuda_runtime/lib")
    host = make_wheel("host", "1.0", requires_dist=["fake-cuda-runtime"], tags=TAGS,
                      files={"host/__init__.py": b"", "host/_C.so": loader}).write(tmp_path)
    kernels = wheels["kernels"]
    report = check_wheels([wheels["runtime-12"], host, kernels], depends={"kernels": ["host"], "host": []})
    assert report.links("host") and report.links("kernels"), report.findings


def test_a_wheel_without_elf_gets_an_explicit_no_binary_evidence_verdict(wheels):
    report = check_wheels([wheels["pure"]])
    [finding] = report.findings
    assert finding.kind == "no-binary-evidence" and report.packages["pure"].evidence == "none"
    assert report.errors == []


def test_summary_is_cached_by_sha256_and_a_tampered_entry_is_recomputed(wheels):
    stats = ScanStats()
    first = scan_local(wheels["ext"], stats=stats)
    assert stats.computed == 1 and [e.path for e in first.elfs] == ["ext/_ext.so"]
    again = ScanStats()
    assert scan_local(wheels["ext"], stats=again) == first and again.cached == 1
    path = summaries.entry_path(first.sha256)
    data = bytearray(path.read_bytes())
    data[-5] ^= 0xFF
    path.write_bytes(bytes(data))
    third = ScanStats()
    assert scan_local(wheels["ext"], stats=third) == first and third.computed == 1


def test_remote_wheel_fetches_only_the_elf_members(wheels):
    big = make_wheel("bulky", "1.0", tags=TAGS, files={
        "bulky/__init__.py": b"", "bulky/data.bin": random.Random(0).randbytes(4 << 20),
        "bulky/_ext.so": wheels["ext"].read_bytes() and _member(wheels["ext"], "ext/_ext.so")})
    with IndexServer() as server:
        server.add(big)
        from envbuilder.index.http import Http

        http = Http()
        stats = ScanStats()
        summary = scan_remote(http, server.file_url(big.filename), big.filename, big.sha256, stats=stats)
    assert [e.path for e in summary.elfs] == ["bulky/_ext.so"]
    assert summary.elfs[0].imported[0].name.startswith("_ZN3c10")
    assert 0 < stats.bytes_fetched < big.size / 4


def _member(wheel: Path, name: str) -> bytes:
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        return zf.read(name)


def test_unknown_manifest_is_bad_input(wheels):
    with pytest.raises(BadInput, match="unknown system manifest"):
        check_wheels([wheels["pure"]], manifest="../etc")


@pytest.mark.parametrize("device,sass,ptx", [
    ("sm_89", ("sm_80",), ()), ("sm_121", ("sm_120",), ()), ("sm_121", ("sm_120a",), ()),
    ("sm_120", ("sm_90",), ("compute_90",)), ("sm_120", ("sm_100a",), ("compute_100a",)),
])
def test_verify_and_the_lock_share_one_coverage_rule(device, sass, ptx):
    from envbuilder.abi.facets import GpuArch, coverage
    from envbuilder.build.verify import _covers

    assert _covers(device, sass, ptx) == coverage(sass, ptx, GpuArch.parse(device)).covered


def test_every_knowledge_source_is_a_public_url_or_a_document_in_this_repository():
    import re as _re
    from pathlib import Path as _Path

    from envbuilder.abi import loaders, systems
    from envbuilder.knowledge import load_knowledge

    repo = _Path(__file__).resolve().parents[2]
    knowledge = load_knowledge()
    sources = [knowledge.abi_provider.source, knowledge.minor_version_compat.source]
    sources += [row.source for row in (*knowledge.toolkits, *knowledge.minor_version_compat.floors,
                                       *knowledge.binaries, *knowledge.wheel_name_conventions,
                                       *knowledge.known_issues)]
    sources += [a.source for a in knowledge.arches if a.source]
    sources += [loader.source for loader in loaders.shipped()]
    sources += [systems.load(s).source for s in systems.available()]
    sources += [p.source for p in systems.apt_packages().values()]
    for source in sources:
        urls = _re.findall(r"https?://\S+", source)
        docs = _re.findall(r"\bdocs/[\w./-]+\.md", source)
        assert urls or docs, source
        for doc in docs:
            assert (repo / doc).is_file(), doc
        assert "compat-facts" not in source, source


def test_floors_are_exact_driver_versions():
    from envbuilder.knowledge import load_knowledge

    floors = {f.cuda_major: f.min_driver for f in load_knowledge().minor_version_compat.floors}
    assert floors[12] == "525.60.13" and floors[11] == "450.80.02"


def test_a_manifest_generated_from_the_image_knows_every_system_symbol(wheels, tmp_path):
    """debian-12-slim lists libc's symbols: an unversioned import of one that does not exist is caught."""
    from envbuilder.abi import systems

    assert systems.for_image("debian:bookworm-slim").id == "debian-12-slim"
    ok = gxx(tmp_path / "_ok.so", 'extern "C" { int puts(const char*); void* PyInit__ok() { puts("x"); return 0; } }\n')
    bad = gxx(tmp_path / "_bad.so", 'extern "C" { int no_such_libc_fn(void); '
              'void* PyInit__bad() { return (void*)(long)no_such_libc_fn(); } }\n')
    wheel = make_wheel("sysuse", "1.0", tags=TAGS, files={"sysuse/_ok.so": ok, "sysuse/_bad.so": bad}).write(tmp_path)
    report = check_wheels([wheel], manifest="debian-12-slim")
    assert [(f.kind, f.file, f.symbol) for f in report.errors] == [("undefined-symbol", "sysuse/_bad.so",
                                                                     "no_such_libc_fn")]
    assert systems.load("debian-12-slim").provides_version("libstdc++.so.6", "GLIBCXX_3.4.30")
    assert not systems.load("debian-12-slim").provides_version("libstdc++.so.6", "GLIBCXX_3.4.31")


def test_an_installed_environment_is_linked_from_its_files(wheels, tmp_path):
    """What `verify` runs inside an image: the same model over the installed bytes."""
    import zipfile

    from envbuilder.abi.installed import link_installed

    site = tmp_path / "site-packages"
    for key in ("fakec10-2.0", "ext"):
        with zipfile.ZipFile(wheels[key]) as zf:
            zf.extractall(site)
    report = link_installed([site], "debian-12-slim", "3.12")
    assert [(f.kind, f.file, f.symbol) for f in report.errors] == [("undefined-symbol", "ext/_ext.so", "_ZN3c103addEi")]


def test_link_cli_refuses_with_exit_1_and_names_the_symbol(wheels, capsys):
    from envbuilder.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["link", str(wheels["fakec10-2.0"]), str(wheels["ext"])])
    out = capsys.readouterr()
    assert exit_info.value.code == 1
    assert "ext 1.0: does not link" in out.out and "c10::add(int)" in out.out
    with pytest.raises(SystemExit) as exit_info:
        main(["link", str(wheels["fakec10-1.0"]), str(wheels["ext"])])
    assert exit_info.value.code in (0, None)


def test_a_matrix_apt_package_adds_its_libraries_to_the_system():
    from envbuilder.abi import systems

    base = systems.load("ubuntu-24.04")
    assert not base.has("libnuma.so.1")
    with_numa = base.with_apt(("libnuma1", "git"))
    assert with_numa.has("libnuma.so.1") and with_numa.provides_version("libnuma.so.1", "libnuma_1.2")


def test_loader_imports_add_an_undeclared_import_edge(wheels, tmp_path):
    """A package that imports its provider without declaring it (torchaudio 2.11.0 and torch)."""
    from envbuilder.abi.link import LinkPackage, link
    from envbuilder.abi.loaders import Loader
    from envbuilder.abi import systems
    from envbuilder.abi.wheelscan import scan_local

    c10, ext = scan_local(wheels["fakec10-1.0"]), scan_local(wheels["ext"])
    packages = [LinkPackage("fakec10", "1.0", (), c10), LinkPackage("ext", "1.0", (), ext)]
    system = systems.load("debian-12-slim")
    assert not link(packages, system, ()).links("ext")
    imports = Loader(package="ext", versions=">=1", imports=("fakec10",), source="https://example.invalid/")
    assert link(packages, system, (imports,)).links("ext")
