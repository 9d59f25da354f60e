"""`doctor`: probe this host (or read a saved nvidia-smi output) and judge it against a target.

Why the lock is read here: a target says which GPU and driver it wants, but only the lock says
which CUDA binaries will run, and a driver that satisfies `driver.min` can still be too old for
one of them. Facets are recomputed by the ABI hook (knowledge and cached inspections), never
taken from the lock file.
"""

from __future__ import annotations

import json
from pathlib import Path

from envbuilder.abi.facets import GpuArch, is_cuda_binary
from envbuilder.abi.hook import AbiHook, cached_inspector
from envbuilder.doctor.capacity import probe_capacity, probe_container
from envbuilder.doctor.checks import Context, all_checks
from envbuilder.doctor.model import Check, DoctorReport, HostFacts
from envbuilder.doctor.nvidia import parse_saved, probe_driver, with_product_arch
from envbuilder.doctor.python import probe_python
from envbuilder.doctor.sources import HostSources
from envbuilder.doctor.toolkit import probe_toolkits
from envbuilder.errors import BadInput, EnvbuilderError
from envbuilder.knowledge import Knowledge, load_knowledge
from envbuilder.lock import lock_path, read_lock
from envbuilder.matrix import load_target, project_root, shipped_targets

MANIFEST_ENV = "ENVBUILDER_IMAGE_MANIFEST"


def product_archs(knowledge: Knowledge) -> dict[str, str]:
    """Product name fragment -> compute capability, from the knowledge base's plain arches."""
    table = {}
    for row in knowledge.arches:
        arch = GpuArch.parse(row.arch)
        if arch.suffix:
            continue
        for product in (p.strip() for p in row.products.split(",")):
            if product and "xx" not in product:
                table.setdefault(product, f"{arch.major}.{arch.minor}")
    return table


def probe_host(sources: HostSources, knowledge: Knowledge) -> HostFacts:
    driver = with_product_arch(probe_driver(sources), product_archs(knowledge))
    return HostFacts(
        driver=driver,
        python=probe_python(sources),
        toolkit=probe_toolkits(sources),
        capacity=probe_capacity(sources),
        container=probe_container(sources) if sources.docker else None,
        image_manifest=sources.environ.get(MANIFEST_ENV),
    )


def saved_host(path: Path, knowledge: Knowledge) -> HostFacts:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the saved nvidia-smi output: {exc.strerror}") from None
    return HostFacts(driver=with_product_arch(parse_saved(text, str(path)), product_archs(knowledge)))


def _other_targets(root: Path | None) -> dict[str, str]:
    arches = {}
    for name in shipped_targets(root):
        try:
            gpu = load_target(name, root).hardware.gpu
        except EnvbuilderError:
            continue
        if gpu is not None:
            arches[name] = gpu.arch
    return arches


def _lock_subjects(target, knowledge: Knowledge, root: Path, lock_file: Path | None):
    path = lock_file or lock_path(root, target.name)
    if not Path(path).exists():
        return (), None, None
    lock = read_lock(Path(path))
    hook = AbiHook(target, knowledge, inspector=cached_inspector, toolchain=lock.toolchain)
    subjects = tuple(s for s in hook.subjects(lock) if is_cuda_binary(s.facets))
    return subjects, f"{Path(path).name} ({lock.digest[:19]})", lock.digest


def image_check(manifest: str) -> Check:
    """Inside an envbuilder image: the installed environment is exactly the image's lock."""
    from envbuilder.build.verify import load_subject, verify

    try:
        data = json.loads(Path(manifest).read_text())
        report = verify(load_subject(Path(manifest), None, None))
    except (OSError, ValueError, EnvbuilderError) as exc:
        return Check(id="image.lock", status="fail", found=f"cannot verify: {exc}", needed="the image's lock",
                     fix="run `envbuilder verify` for details")
    label = data.get("lock-digest", "?")
    needed = f"every distribution and extension of lock {label[:19]}"
    if label != report.lock_digest:
        return Check(id="image.lock", status="fail", found=f"lock file digest {report.lock_digest[:19]}",
                     needed=f"the digest the image was built from, {label[:19]}", fix="rebuild the image from its lock")
    if report.ok:
        return Check(id="image.lock", status="pass", needed=needed,
                     found=f"{report.checked} distributions match, {report.extensions} extensions import")
    return Check(id="image.lock", status="fail", needed=needed, found="; ".join(str(p) for p in report.problems[:3]),
                 fix="rebuild the image; `envbuilder verify` lists every problem")


def _validated(target, root: Path, digest: str | None, host: HostFacts, live: bool) -> Check:
    """Validated on this hardware / elsewhere / never, from the target's verified records."""
    import platform

    from envbuilder.doctor.validated import validated_check
    from envbuilder.validated.evidence import gather

    return validated_check(gather(root, target.name, target), digest, host, platform.machine() or None, live)


def run_doctor(target_name: str | None = None, saved_smi: Path | None = None, sources: HostSources | None = None,
               lock_file: Path | None = None, root: Path | None = None) -> DoctorReport:
    target = load_target(target_name, root) if target_name else None
    knowledge = target.knowledge_base() if target else load_knowledge()
    subjects, label, digest = (), None, None
    if target is not None:
        subjects, label, digest = _lock_subjects(target, knowledge, root or project_root(), lock_file)
    live = saved_smi is None
    host = probe_host(sources or HostSources(), knowledge) if live else saved_host(saved_smi, knowledge)
    ctx = Context(host=host, knowledge=knowledge, target=target, subjects=subjects, lock_label=label,
                  other_targets=_other_targets(root) if target is not None else None)
    checks = all_checks(ctx, live=live)
    if live and host.image_manifest:
        checks.append(image_check(host.image_manifest))
    if target is not None:
        checks.append(_validated(target, root or project_root(), digest, host, live))
    return DoctorReport(target=target.name if target else None, host=host, checks=tuple(checks))
