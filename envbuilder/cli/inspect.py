"""`envbuilder inspect FILE...`: what a wheel or shared object needs and which GPUs it runs on."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from envbuilder.abi.inspect import inspect_binary, inspect_wheel_path, is_wheel
from envbuilder.abi.report import BinaryReport
from envbuilder.abi.symbols import TORCH_PROVIDERS
from envbuilder.console import make_console

_EXAMPLES = 2


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def _symbols_line(report: BinaryReport, torch: bool) -> str:
    parts = []
    for group in report.requires:
        if (group.provider in TORCH_PROVIDERS) != torch:
            continue
        label = f"{group.provider} ({group.prefix})" if group.prefix else group.provider
        parts.append(f"{label} {group.count}")
    return " · ".join(parts) or "none"


def _abi_line(report: BinaryReport) -> str:
    if report.cxx11_abi is True:
        return f"cxx11 ABI (std::__cxx11 in {report.cxx11_symbols} torch symbols)"
    if report.cxx11_abi is False:
        return f"pre-cxx11 ABI ({report.old_abi_symbols} torch symbols use the old std::string)"
    if report.cxx11_symbols and report.old_abi_symbols:
        return f"mixed ({report.cxx11_symbols} cxx11, {report.old_abi_symbols} old)"
    return "no evidence (no torch symbol takes a std::string)"


def _fatbin_line(report: BinaryReport, kind: str) -> str:
    archs = report.sass_archs if kind == "sass" else report.ptx_archs
    if not archs:
        return "none"
    images = sum(i.count for i in report.fatbin if i.kind == kind)
    return f"{' '.join(archs)}  ({images} images)"


def _binary_table(report: BinaryReport) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold cyan")
    table.add_column()
    table.add_row("needs", " ".join(report.needed) or "nothing")
    if report.soname:
        table.add_row("soname", report.soname)
    table.add_row("torch symbols", _symbols_line(report, torch=True))
    if report.torch_consumer:
        table.add_row("C++ ABI", _abi_line(report))
    table.add_row("other symbols", _symbols_line(report, torch=False))
    floors = [v for v in (report.glibc_max, report.glibcxx_max, report.cxxabi_max) if v]
    if floors:
        table.add_row("host floor", " ".join(floors))
    cuda = [f"nvcc {v}" for v in report.nvcc_versions] + [f"PTX ISA {v}" for v in report.ptx_isa]
    if report.cuda_runtime:
        cuda.append(f"libcudart {report.cuda_runtime}")
    table.add_row("CUDA", " · ".join(cuda) or "none found")
    table.add_row("SASS", _fatbin_line(report, "sass"))
    table.add_row("PTX", _fatbin_line(report, "ptx"))
    return table


def _print_binary(console: Console, report: BinaryReport) -> None:
    console.print(f"[bold]{report.path}[/]  {_size(report.size)}  sha256 {report.sha256[:12]}…")
    console.print(_binary_table(report))


@click.command("inspect")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the full reports as JSON.")
@click.option("--no-cache", is_flag=True, help="Read the files again even if their hash is cached.")
def inspect_command(files: tuple[Path, ...], as_json: bool, no_cache: bool) -> None:
    """Needed libraries, torch symbols, C++ ABI and CUDA SASS/PTX archs of wheels or .so files."""
    results = []
    for path in files:
        if is_wheel(path):
            results.append({"file": str(path), "kind": "wheel", "report": inspect_wheel_path(path, not no_cache)})
        else:
            results.append({"file": str(path), "kind": "binary", "report": inspect_binary(path, not no_cache)})
    if as_json:
        click.echo(json.dumps([{**r, "report": r["report"].model_dump(mode="json")} for r in results], indent=2))
        return
    console = make_console()
    for result in results:
        report = result["report"]
        if result["kind"] == "binary":
            _print_binary(console, report)
            continue
        console.print(f"[bold magenta]{report.filename}[/]: {len(report.binaries)} shared objects; "
                      f"SASS {' '.join(report.sass_archs) or 'none'}; PTX {' '.join(report.ptx_archs) or 'none'}")
        for binary in report.binaries:
            _print_binary(console, binary)


COMMANDS = [inspect_command]
