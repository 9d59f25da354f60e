"""The matrix's `serve:` block: which server to start, on what model, with which flags and env.

Kept import-light (pydantic only) because the matrix schema imports it. The profile states intent;
`envbuilder.serve.command` turns it into the exact argv and environment, so `--dry-run` and the real
launch can never disagree.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from envbuilder.model import StrictModel

ServerKind = Literal["sglang", "llama.cpp", "transformers"]


class ServeProfile(StrictModel):
    """How to start one OpenAI-compatible model server and know that it is ready.

    `args` are appended verbatim after the flags the kind needs (model, host, port, served name), so a
    recipe copied from a model card stays readable in the matrix. `model` and `binary` are defaults:
    `ENVBUILDER_MODEL` / `ENVBUILDER_SERVER_BINARY` (or `--model` / `--binary`) override them, because
    the weights and the binary live at different paths in every image and on every host.
    """

    kind: ServerKind = "sglang"
    model: str = Field(description="model path or hub id the server loads")
    served_model_name: str | None = Field(
        default=None, description="name clients send as `model`; default: what /v1/models reports"
    )
    binary: str | None = Field(
        default=None,
        description="executable; default per kind: python -m sglang.launch_server, llama-server, transformers",
    )
    args: list[str] = Field(default_factory=list, description="extra server flags, verbatim")
    env: dict[str, str] = Field(default_factory=dict, description="environment added for the server")
    host: str = "127.0.0.1"
    port: int = Field(default=30000, ge=1, le=65535)
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
        return value
