"""What a run ran: the lock (from the image, or a lock file), the image, and the model's weights.

Why the weights are pinned: a benchmark of "lukealonso/GLM-5-NVFP4" says little if the repository
moved on; a record keeps the hub revision (the snapshot folder of a Hugging Face cache is named by
its commit) or, for weights served from plain local files, each file's sha256. Hugging Face
cache blobs of large files are named by their sha256 already, so those hashes cost nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from envbuilder.errors import BadInput, Unreachable
from envbuilder.validated.model import ImageRef, WeightsFile

IMAGE_ID_ENV = "ENVBUILDER_IMAGE_DIGEST"
LOCK_DIGEST_ENV = "ENVBUILDER_LOCK_DIGEST"
LOCK_DIGEST_LABEL = "io.envbuilder.lock-digest"
WEIGHT_SUFFIXES = (".safetensors", ".gguf", ".bin", ".pt", ".pth", ".json", ".model", ".tiktoken", ".txt")
MAX_WEIGHT_FILES = 10000
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class LockIdentity:
    digest: str
    source: str  # image | lock-file | given


def lock_identity(environ: Mapping[str, str], lock_file: Path | None, image: ImageRef | None) -> LockIdentity | None:
    """The lock the server ran from: the image's (label or env inside it), else a lock file's digest.

    Inside an envbuilder image ENVBUILDER_LOCK_DIGEST says which lock built it; a lock file on a
    bare host only says what was meant to be installed, and the record says so (`lock-file`).
    """
    if image is not None and image.lock_digest:
        return LockIdentity(image.lock_digest, "image")
    if digest := environ.get(LOCK_DIGEST_ENV):
        if not _DIGEST.match(digest):
            raise BadInput(f"environment {LOCK_DIGEST_ENV}: {digest[:80]!r} is not a sha256:<64 hex> digest")
        return LockIdentity(digest, "image")
    if lock_file is not None:
        from envbuilder.lock import read_lock

        return LockIdentity(read_lock(lock_file).digest, "lock-file")
    return None


def image_in_env(environ: Mapping[str, str]) -> ImageRef | None:
    """Inside an image: its lock digest from the build, its id if the runner passed it (`-e`)."""
    image_id, lock = environ.get(IMAGE_ID_ENV), environ.get(LOCK_DIGEST_ENV)
    if not image_id and not lock:
        return None
    if image_id and not _DIGEST.match(image_id):
        raise BadInput(f"environment {IMAGE_ID_ENV}: {image_id[:80]!r} is not a sha256:<64 hex> image id "
                       "(pass `docker image inspect -f '{{.Id}}' IMAGE`)")
    return ImageRef(id=image_id or None, lock_digest=lock if lock and _DIGEST.match(lock) else None)


def image_from_engine(reference: str) -> ImageRef:
    """Outside the image: ask the engine for the image's id and its lock-digest label."""
    from envbuilder.build import engine

    from docker.errors import DockerException, ImageNotFound

    try:
        image = engine.client().images.get(reference)
    except ImageNotFound:
        raise BadInput(f"option --image: {reference!r} is not in the local engine") from None
    except DockerException as exc:
        raise Unreachable(f"the docker engine did not answer about {reference!r}: {exc}") from None
    lock = (image.labels or {}).get(LOCK_DIGEST_LABEL)
    return ImageRef(id=image.id, lock_digest=lock if lock and _DIGEST.match(lock) else None,
                    reference=reference[:300])


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _hub_snapshot(path: Path) -> str | None:
    """`.../models--org--name/snapshots/<commit>/...` -> the commit."""
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        if part == "snapshots" and i > 0 and parts[i - 1].startswith("models--") and _HEX40.match(parts[i + 1]):
            return parts[i + 1]
    return None


def _weights_file(path: Path, name: str) -> WeightsFile:
    target = path.resolve()
    size = target.stat().st_size
    blob = target.name if path.is_symlink() and target.parent.name == "blobs" else ""
    sha = blob if _HEX64.match(blob) else _sha256_file(target)  # LFS blobs are named by their sha256
    return WeightsFile(file=name[:300], sha256=sha, size=size)


def local_weights(model: str) -> tuple[str | None, tuple[WeightsFile, ...]]:
    """(hub revision, weight files) for a model served from local files; (None, ()) for a hub id."""
    path = Path(model)
    if not path.exists():
        return None, ()
    revision = _hub_snapshot(path.absolute())
    if path.is_file():
        return revision, (_weights_file(path, path.name),)
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    return revision, tuple(_weights_file(p, p.relative_to(path).as_posix()) for p in files[:MAX_WEIGHT_FILES])


def hub_revision(model: str, environ: Mapping[str, str]) -> str | None:
    """The commit a Hugging Face cache resolves `org/name` to (refs/main), if the cache is here."""
    if "/" not in model or model.count("/") != 1 or Path(model).exists():
        return None
    home = environ.get("HF_HUB_CACHE") or (Path(environ["HF_HOME"]) / "hub" if environ.get("HF_HOME") else
                                           Path(environ.get("HOME", "~")).expanduser() / ".cache/huggingface/hub")
    ref = Path(home) / f"models--{model.replace('/', '--')}" / "refs" / "main"
    try:
        commit = ref.read_text().strip()
    except OSError:
        return None
    return commit if _HEX40.match(commit) else None


def model_identity(model: str, environ: Mapping[str, str] | None = None) -> tuple[str | None, tuple[WeightsFile, ...]]:
    environ = dict(os.environ) if environ is None else environ
    revision, weights = local_weights(model)
    return revision or hub_revision(model, environ), weights


_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|CREDENTIAL)", re.I)


def redact(env: Mapping[str, str]) -> dict[str, str]:
    """The server's added environment, with values of secret-looking names hidden."""
    return {k: ("<redacted>" if _SECRET_NAME.search(k) else v) for k, v in env.items()}
