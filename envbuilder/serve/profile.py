"""The matrix's `serve:` block: which server to start, on what model, with which flags and env.

Kept import-light (pydantic only) because the matrix schema imports it. The profile states intent;
`envbuilder.serve.command` turns it into the exact argv and environment, so `--dry-run` and the real
launch can never disagree.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from envbuilder.model import StrictModel

ServerKind = Literal["sglang", "vllm", "llama.cpp", "transformers", "command"]

# `{name}` in a `command` kind's argv; anything else in braces (a JSON argument) is left alone.
PLACEHOLDER = re.compile(r"\{(\w+)\}")
PLACEHOLDERS = ("model", "host", "port", "served_model_name")

# Each server's own default port: a profile that names none listens where that server's docs say.
DEFAULT_PORT = {"sglang": 30000, "vllm": 8000, "llama.cpp": 8080, "transformers": 8000, "command": 8000}

# The flags a kind adds itself (model, host, port, served name): repeating one in `args` would pass it
# twice, and which one wins is the server's secret. `served_model_name` is handled exactly once.
KIND_FLAGS = {
    "sglang": ("--model-path", "--model", "--host", "--port", "--served-model-name"),
    "vllm": ("--model", "--host", "--port", "--served-model-name"),
    "llama.cpp": ("-m", "--model", "--host", "--port", "--alias", "-a"),
    "transformers": ("--host", "--port"),
    "command": (),
}


#: serve.env names whose values are credentials (HF_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY...).
#: Whole name parts only: TOKENIZERS_PARALLELISM and MAX_TOKENS are configuration, HF_TOKEN is not.
_CREDENTIAL_NAME = re.compile(r"(?i)(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|API_KEY|ACCESS_KEY|PRIVATE_KEY)(_|$)")


class ServeProfile(StrictModel):
    """How to start one OpenAI-compatible model server and know that it is ready.

    `args` are appended verbatim after the flags the kind needs (model, host, port, served name), so a
    recipe copied from a model card stays readable in the matrix. `model` and `binary` are defaults:
    `ENVBUILDER_MODEL` / `ENVBUILDER_SERVER_BINARY` (or `--model` / `--binary`) override them, because
    the weights and the binary live at different paths in every image and on every host.

    `kind: command` runs anything else: `command` is the whole argv with `{model}`, `{host}`, `{port}`
    and `{served_model_name}` placeholders, and `ready_path` is its readiness probe.
    """

    kind: ServerKind = "sglang"
    model: str = Field(description="model path or hub id the server loads")
    served_model_name: str | None = Field(
        default=None, description="name clients send as `model`; default: what /v1/models reports"
    )
    binary: str | None = Field(
        default=None,
        description="executable; default per kind: python -m sglang.launch_server, vllm serve, llama-server, "
                    "transformers serve; for `command`, replaces the command's first word",
    )
    command: list[str] | None = Field(
        default=None, description="kind `command` only: the server's argv with {model} {host} {port} "
                                  "{served_model_name} placeholders")
    args: list[str] = Field(default_factory=list, description="extra server flags, verbatim")
    env: dict[str, str] = Field(default_factory=dict, description="environment added for the server")
    host: str = "127.0.0.1"
    port: int = Field(default=30000, ge=1, le=65535, description="default: the kind's own (sglang 30000, vllm 8000, ...)")
    ready_path: str = Field(default="/health", description="GET answers 200 once the model can generate")
    models_path: str = Field(default="/v1/models", description="GET lists the served model; checked after ready")
    info_path: str | None = Field(
        default=None, description="GET returning server details for the report (SGLang: /server_info)"
    )
    startup_timeout_s: float = Field(default=900.0, gt=0, description="deadline for ready (GLM-5 takes ~8 min)")
    poll_interval_s: float = Field(default=1.0, gt=0)
    stop_timeout_s: float = Field(default=30.0, gt=0, description="SIGTERM grace before SIGKILL")
    log_file: str | None = Field(default=None, description="server log path; default serve-<target>.log")

    @field_validator("ready_path", "models_path", "info_path")
    @classmethod
    def _absolute_path(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError(f"must start with '/': {value!r}")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [name for name in value if not name or "=" in name or not name.replace("_", "a").isalnum()]
        if bad:
            raise ValueError(f"invalid environment variable name(s): {', '.join(map(repr, bad))}")
        secret = [name for name, v in value.items() if v and _CREDENTIAL_NAME.search(name)]
        if secret:
            raise ValueError(f"{', '.join(secret)} looks like a credential: a matrix is committed and copied into "
                             "images; leave it out and set it where the server runs (`docker run -e NAME`): the "
                             "server inherits the environment")
        return value

    @field_validator("command")
    @classmethod
    def _placeholders(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return value
        if not value or not value[0].strip():
            raise ValueError("must name the executable first, e.g. [my-server, --model, '{model}']")
        unknown = sorted({m for arg in value for m in PLACEHOLDER.findall(arg) if m not in PLACEHOLDERS})
        if unknown:
            raise ValueError(f"unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
                             f"known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
        return value

    @model_validator(mode="after")
    def _kind_rules(self) -> ServeProfile:
        if self.kind == "command":
            if self.command is None:
                raise ValueError("kind `command` needs `command:`, the server's argv, e.g. "
                                 "[my-server, --model, '{model}', --port, '{port}']")
            used = {m for arg in self.command for m in PLACEHOLDER.findall(arg)}
            if self.served_model_name and "served_model_name" not in used:
                raise ValueError("served_model_name is set but `command` has no {served_model_name}: "
                                 "put it where the server takes its name, or drop served_model_name")
        elif self.command is not None:
            raise ValueError(f"`command:` is for kind `command`; kind {self.kind!r} builds its own argv "
                             f"(add extra flags to `args:`)")
        repeated = [a.split("=", 1)[0] for a in self.args if a.split("=", 1)[0] in KIND_FLAGS[self.kind]]
        if repeated:
            raise ValueError(f"args repeat {', '.join(dict.fromkeys(repeated))}, which kind {self.kind!r} "
                             f"already passes from model/host/port/served_model_name: set those keys instead")
        return self

    @model_validator(mode="before")
    @classmethod
    def _kind_port(cls, data: object) -> object:
        if isinstance(data, dict) and "port" not in data and data.get("kind", "sglang") in DEFAULT_PORT:
            return {**data, "port": DEFAULT_PORT[data.get("kind", "sglang")]}
        return data
