"""The NVIDIA driver and GPUs, from NVML, else nvidia-smi, else /proc/driver/nvidia.

Why three sources: NVML is exact but needs nvidia-ml-py; nvidia-smi is on every driver install
but its CSV fields vary with the driver; /proc still answers when user space is broken (a
driver upgraded without a reboot). The parsers also read saved output, so `--nvidia-smi FILE`
judges a host envbuilder cannot reach.
"""

from __future__ import annotations

import csv
import io
import re

from envbuilder.doctor.model import DriverFacts, Gpu
from envbuilder.doctor.sources import HostSources, NvmlUnavailable
from envbuilder.errors import BadInput

SMI_QUERY = "index,name,memory.total,driver_version,compute_cap,persistence_mode"
_PROC_VERSION = re.compile(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")
_KV = re.compile(r"^(\s*)([^:]+?)\s*:\s*(.*)$")
_CSV_FIELDS = {
    "index": "index", "name": "name", "memory.total": "memory", "driver_version": "driver",
    "compute_cap": "cc", "persistence_mode": "persistence",
}
_DEFAULT_CSV_ORDER = ("name", "memory", "driver", "cc")  # the query the issue asks users to paste


def _persistence(text: str | None) -> bool | None:
    value = (text or "").strip().lower()
    return {"enabled": True, "disabled": False}.get(value)


_UNKNOWN = {"", "[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]"}
_MIB = re.compile(r"(\d{1,9}(?:\.\d{1,6})?)(?:\s*MiB)?")
_CC = re.compile(r"\d{1,2}\.\d{1,2}")
_DRIVER = re.compile(r"\d{1,4}(?:\.\d{1,4}){1,3}")
MAX_SAVED_BYTES = 4 << 20  # a saved nvidia-smi output of 8 GPUs is a few kB


def _where(origin: str, line: int | None, key: str) -> str:
    return f"{origin}:{line}: key {key!r}" if line else f"{origin}: key {key!r}"


def _checked(value: str | None, pattern: re.Pattern[str], what: str, origin: str, line: int | None,
             key: str) -> str | None:
    """`value` if it is a `what` (None when nvidia-smi says it does not know); BadInput otherwise."""
    if value is None or value.strip().lower() in _UNKNOWN:
        return None
    if pattern.fullmatch(value.strip()) is None:
        raise BadInput(f"{_where(origin, line, key)}: {value[:80]!r} is not {what}")
    return value.strip()


def _mib(text: str, origin: str = "nvidia-smi", line: int | None = None, key: str = "memory.total") -> int | None:
    """'143771 MiB' (or '143771' with nounits) -> 143771; '[N/A]' -> None; 'abc MiB' -> BadInput."""
    value = _checked(text, _MIB, "a size in MiB", origin, line, key)
    return None if value is None else int(float(_MIB.fullmatch(value).group(1)))  # type: ignore[union-attr]


def _cuda_from_int(value: int) -> str:
    return f"{value // 1000}.{value % 1000 // 10}"


def from_nvml(answers: dict) -> DriverFacts:
    """DriverFacts from recorded or live NVML answers (see sources.nvml_answers)."""
    gpus = tuple(
        Gpu(index=g["index"], name=g["name"], memory_mib=g["memory_total_bytes"] // (1024 * 1024),
            compute_capability="{}.{}".format(*g["compute_capability"]), persistence=g.get("persistence_mode"))
        for g in answers.get("gpus", ())
    )
    cuda = answers.get("cuda_driver_version")
    return DriverFacts(version=answers.get("driver_version"), cuda=_cuda_from_int(cuda) if cuda else None,
                       source="nvml", gpus=gpus, gpus_source="nvml")


def _csv_header(row: list[str]) -> list[str] | None:
    keys = [cell.strip().split(" [")[0] for cell in row]
    return [_CSV_FIELDS[k] for k in keys] if all(k in _CSV_FIELDS for k in keys) else None


def parse_smi_csv(text: str, origin: str = "nvidia-smi") -> DriverFacts:
    """`nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` output."""
    if len(text) > MAX_SAVED_BYTES:
        raise BadInput(f"{origin}: {len(text):,} characters; nvidia-smi output is a few kB (at most {MAX_SAVED_BYTES:,})")
    reader = csv.reader(io.StringIO(text.strip()), skipinitialspace=True)
    try:
        numbered = [(reader.line_num, r) for r in reader if r]
    except csv.Error as exc:
        raise BadInput(f"{origin}:{reader.line_num}: not nvidia-smi CSV output: {exc}") from None
    rows = [r for _, r in numbered]
    if not rows:
        raise BadInput(f"{origin}: empty nvidia-smi output")
    header = _csv_header(rows[0])
    columns = header or list(_DEFAULT_CSV_ORDER)
    body = rows[1:] if header else rows
    gpus, drivers = [], set()
    keys = {v: k for k, v in _CSV_FIELDS.items()}
    for number, row in enumerate(body):
        line = numbered[number + (1 if header else 0)][0]
        if len(row) != len(columns):
            raise BadInput(f"{origin}:{line}: expected {len(columns)} columns "
                           f"({', '.join(columns)}), found {len(row)}")
        cell = dict(zip(columns, (c.strip() for c in row)))
        index = _checked(cell.get("index"), re.compile(r"\d{1,4}"), "a GPU index", origin, line, "index")
        gpus.append(Gpu(
            index=int(index) if index is not None else number,
            name=cell.get("name", "?")[:200],
            memory_mib=_mib(cell.get("memory", ""), origin, line, keys["memory"]),
            compute_capability=_checked(cell.get("cc"), _CC, "a compute capability like 9.0", origin, line,
                                        keys["cc"]),
            persistence=_persistence(cell.get("persistence")),
        ))
        driver = _checked(cell.get("driver"), _DRIVER, "a driver version like 590.48.01", origin, line,
                          keys["driver"])
        if driver:
            drivers.add(driver)
    if len(drivers) > 1:
        raise BadInput(f"{origin}: several driver versions in one output: {', '.join(sorted(drivers))}")
    return DriverFacts(version=drivers.pop() if drivers else None, source=origin, gpus=tuple(gpus),
                       gpus_source=origin)


def parse_smi_q(text: str, origin: str = "nvidia-smi -q") -> DriverFacts:
    """`nvidia-smi -q`: a header (driver, CUDA) then one indented block per GPU."""
    if len(text) > MAX_SAVED_BYTES:
        raise BadInput(f"{origin}: {len(text):,} characters; nvidia-smi output is a few kB (at most {MAX_SAVED_BYTES:,})")
    top: dict[str, str] = {}
    gpus: list[dict[str, str]] = []
    lines: dict[tuple[int, str], int] = {}  # (gpu number or -1, key) -> line number, for messages
    section = ""
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(r"^GPU [0-9A-Fa-f:.]+\s*$", line):
            gpus.append({})
            section = ""
            continue
        match = _KV.match(line)
        if not match:
            stripped = line.strip()
            if stripped and gpus and len(line) - len(line.lstrip()) == 4:
                section = stripped
            continue
        indent, key, value = len(match.group(1)), match.group(2).strip(), match.group(3).strip()
        if not gpus:
            top[key] = value
            lines[(-1, key)] = number
        elif indent == 4:
            section = ""
            gpus[-1][key] = value
            lines[(len(gpus) - 1, key)] = number
        elif section:
            gpus[-1].setdefault(f"{section}/{key}", value)
            lines.setdefault((len(gpus) - 1, f"{section}/{key}"), number)
    if "Driver Version" not in top:
        raise BadInput(f"{origin}: no 'Driver Version' line: not `nvidia-smi -q` output")
    version = _checked(top["Driver Version"], _DRIVER, "a driver version like 590.48.01", origin,
                       lines[(-1, "Driver Version")], "Driver Version")
    if version is None:
        raise BadInput(f"{_where(origin, lines[(-1, 'Driver Version')], 'Driver Version')}: empty")
    cuda = _checked(top.get("CUDA Version"), _CC, "a CUDA version like 12.8", origin,
                    lines.get((-1, "CUDA Version")), "CUDA Version")
    return DriverFacts(
        version=version,
        cuda=cuda,
        source=origin,
        gpus=tuple(_q_gpu(i, g, origin, lines) for i, g in enumerate(gpus)),
        gpus_source=origin,
    )


def _q_gpu(index: int, block: dict[str, str], origin: str, lines: dict[tuple[int, str], int]) -> Gpu:
    cc_key = "Compute Capability" if "Compute Capability" in block else "CUDA Compute Capability"
    minor = block.get("Minor Number", "")
    return Gpu(
        index=int(minor) if minor.isdigit() and len(minor) < 5 else index,
        name=block.get("Product Name", "?")[:200],
        memory_mib=_mib(block.get("FB Memory Usage/Total", ""), origin,
                        lines.get((index, "FB Memory Usage/Total")), "FB Memory Usage/Total"),
        compute_capability=_checked(block.get(cc_key), _CC, "a compute capability like 9.0", origin,
                                    lines.get((index, cc_key)), cc_key),
        persistence=_persistence(block.get("Persistence Mode")),
    )


def parse_saved(text: str, origin: str) -> DriverFacts:
    """A saved nvidia-smi output of either form, told apart by its content."""
    if "NVSMI LOG" in text or re.search(r"^Driver Version\s+:", text, re.M):
        return parse_smi_q(text, origin)
    if "|" in text and "NVIDIA-SMI" in text:
        raise BadInput(f"{origin}: this is nvidia-smi's table view; save `nvidia-smi --query-gpu=name,memory.total,"
                       "driver_version,compute_cap --format=csv` or `nvidia-smi -q` instead")
    return parse_smi_csv(text, origin)


def parse_proc_version(text: str) -> str | None:
    match = _PROC_VERSION.search(text)
    return match.group(1) if match else None


def _modules(sources: HostSources) -> tuple[bool | None, bool | None]:
    text = sources.read("/proc/modules")
    if text is None:
        return None, None
    names = {line.split()[0] for line in text.splitlines() if line.split()}
    return "nvidia" in names, "nvidia_uvm" in names


def _from_smi(sources: HostSources, errors: list[str]) -> DriverFacts | None:
    ran = sources.run(["nvidia-smi", f"--query-gpu={SMI_QUERY}", "--format=csv"])
    if ran is None:
        errors.append("nvidia-smi: not found on PATH")
        return None
    if ran.returncode == 0:
        return parse_smi_csv(ran.stdout)
    said = (ran.stdout.strip() or ran.stderr.strip() or f"exit status {ran.returncode}").splitlines()
    errors.append("nvidia-smi: " + (said[0] if said else "")[:200])
    ran = sources.run(["nvidia-smi", "-q"])  # older drivers lack the compute_cap field
    if ran is not None and ran.returncode == 0 and "Driver Version" in ran.stdout:
        return parse_smi_q(ran.stdout)
    return None


def probe_driver(sources: HostSources) -> DriverFacts:
    """The first source that answers wins; what the others said is kept for the report."""
    errors: list[str] = []
    facts = None
    if sources.nvml is not None:
        try:
            facts = from_nvml(sources.nvml())
        except NvmlUnavailable as exc:
            errors.append(str(exc))
    if facts is None:
        facts = _from_smi(sources, errors)
    proc = sources.read("/proc/driver/nvidia/version")
    if facts is None and proc is not None and parse_proc_version(proc):
        facts = DriverFacts(version=parse_proc_version(proc), source="/proc/driver/nvidia/version")
    elif proc is None:
        errors.append("/proc/driver/nvidia/version: absent (no NVIDIA kernel module)")
    module, uvm = _modules(sources)
    return (facts or DriverFacts()).model_copy(update={
        "module_loaded": module, "uvm_loaded": uvm, "errors": tuple(errors),
    })


def with_product_arch(facts: DriverFacts, products: dict[str, str]) -> DriverFacts:
    """Fill a missing compute capability from the product name (`nvidia-smi -q` may not print it).

    `products` maps a product name fragment ("H200") to a compute capability ("9.0"); the GPU
    keeps a note that the value was inferred, so the report never passes it off as measured.
    """
    gpus = []
    for gpu in facts.gpus:
        if gpu.compute_capability is None:
            hit = next((cc for fragment, cc in products.items() if fragment in gpu.name), None)
            if hit:
                gpu = gpu.model_copy(update={"compute_capability": hit, "cc_source": "product name"})
        gpus.append(gpu)
    return facts.model_copy(update={"gpus": tuple(gpus)})
