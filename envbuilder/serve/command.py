"""Serve profile -> the exact argv and environment of the server process.

One function builds the command for both `--dry-run` and the real launch, so what a user reads is
what runs. Model and binary overrides come from flags, then `ENVBUILDER_MODEL` /
`ENVBUILDER_SERVER_BINARY`, then the profile: images and hosts keep weights in different places.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from envbuilder.serve.profile import PLACEHOLDER, ServeProfile

MODEL_ENV = "ENVBUILDER_MODEL"
BINARY_ENV = "ENVBUILDER_SERVER_BINARY"

_DEFAULT_BINARY = {
    "sglang": "python3 -m sglang.launch_server",
    "vllm": "vllm serve",
    "llama.cpp": "llama-server",
    "transformers": "transformers serve",
}


@dataclass(frozen=True)
class ServeCommand:
    """Everything needed to start the server and talk to it."""

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # only what the profile adds
    base_url: str = ""
    model: str = ""
    served_model_name: str | None = None

    def shell(self, hide_env: bool = False) -> str:
        """A copy-pasteable shell line: `A=1 B=2 binary args...`.

        hide_env=True writes `A=*** B=***`: for image labels and build plans, where an env value
        (a hub token) would be kept in clear; the image's `envbuilder serve` sets the real ones.
        """
        prefix = [f"{k}={'***' if hide_env else shlex.quote(v)}" for k, v in sorted(self.env.items())]
        return " ".join([*prefix, shlex.join(self.argv)])


def _kind_flags(profile: ServeProfile, model: str) -> list[str]:
    """The flags each server needs to load the model and listen where the profile says.

    The served name is passed here and only here (the profile rejects `args` that repeat it).
    """
    where = ["--host", profile.host, "--port", str(profile.port)]
    name = profile.served_model_name
    if profile.kind == "sglang":
        return ["--model-path", model, *where, *(["--served-model-name", name] if name else [])]
    if profile.kind == "vllm":  # `vllm serve MODEL`: the model is positional
        return [model, *where, *(["--served-model-name", name] if name else [])]
    if profile.kind == "llama.cpp":
        return ["-m", model, *where, *(["--alias", name] if name else [])]
    # transformers serve loads models on demand by request name; its positional FORCE_MODEL preloads one.
    return [model, *where]


def _fill(profile: ServeProfile, model: str, binary: str | None) -> list[str]:
    """A `command` kind's argv with its placeholders filled; each value stays one argv element."""
    values = {"model": model, "host": profile.host, "port": str(profile.port),
              "served_model_name": profile.served_model_name or ""}
    argv = [PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in profile.command or ()]
    return [*shlex.split(binary), *argv[1:]] if binary else argv


def client_host(host: str) -> str:
    """A wildcard listen address is not a destination: talk to loopback instead."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)


def build_command(
    profile: ServeProfile,
    *,
    model: str | None = None,
    binary: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServeCommand:
    environ = {} if environ is None else environ
    model = model or environ.get(MODEL_ENV) or profile.model
    binary = binary or environ.get(BINARY_ENV) or profile.binary
    if profile.kind == "command":
        argv = (*_fill(profile, model, binary), *profile.args)
    else:
        argv = (*shlex.split(binary or _DEFAULT_BINARY[profile.kind]), *_kind_flags(profile, model), *profile.args)
    host = client_host(profile.host)
    host = f"[{host}]" if ":" in host else host
    return ServeCommand(
        argv=argv,
        env=dict(profile.env),
        base_url=f"http://{host}:{profile.port}",
        model=model,
        served_model_name=profile.served_model_name,
    )
