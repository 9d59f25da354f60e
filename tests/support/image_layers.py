"""An image's layers as the engine stores them: diff id (sha256 of the uncompressed tar) and size.

`docker save` writes each layer's tar with a manifest listing them in order; the sha256 of a tar is
the layer's diff id, the same on every engine, so two images share a layer exactly when their lists
share an id. Used by the layer tests and `bench/layers` to count what a bump really changed.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from envbuilder.build import engine


@dataclass(frozen=True)
class ImageLayer:
    diff_id: str
    size: int  # bytes of the uncompressed layer tar


def image_layers(tag: str) -> list[ImageLayer]:
    with tempfile.TemporaryDirectory(prefix="envbuilder-save-") as tmp:
        saved = Path(tmp) / "image.tar"
        with saved.open("wb") as handle:
            for chunk in engine.client().images.get(tag).save(named=True):
                handle.write(chunk)
        with tarfile.open(saved) as tar:
            manifest = json.load(tar.extractfile("manifest.json"))[0]
            out = []
            for member in manifest["Layers"]:
                digest, size = hashlib.sha256(), 0
                stream = tar.extractfile(member)
                while chunk := stream.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
                out.append(ImageLayer("sha256:" + digest.hexdigest(), size))
    return out


def changed(before: list[ImageLayer], after: list[ImageLayer]) -> list[ImageLayer]:
    """The layers of `after` that `before` does not have (what a node holding `before` pulls)."""
    have = {layer.diff_id for layer in before}
    return [layer for layer in after if layer.diff_id not in have]
