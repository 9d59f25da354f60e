"""Find and start the real LLM servers the smoke and serve tests run against.

Detection rule: an environment variable set by .ci/parts/30-llm-servers.sh names the binary (CI:
a missing one is a failure, not a skip); without it the fixed cache path is tried; without that
the test skips and says how to get the server.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

from envbuilder.serve.command import ServeCommand
from envbuilder.serve.process import ServerProcess
from envbuilder.serve.ready import ServerFacts, wait_ready
from tests.conftest import require_tool

CACHE = Path(os.environ.get("ENVBUILDER_CI_CACHE", Path.home() / ".cache" / "envbuilder-ci"))
TINY = Path(__file__).parent / "tiny_llm"
HOW = "run `bash .ci/parts/30-llm-servers.sh` (builds/installs it under ~/.cache/envbuilder-ci)"


def _find(env: str, default: Path, what: str) -> Path:
    if os.environ.get(env):
        path = Path(os.environ[env])
        assert path.is_file(), f"{env}={path} does not exist (the CI part should have made it)"
        return path
    if default.is_file():
        return default
    require_tool(what, False, f"no ${env}, nothing at {default}; {HOW}")


def llama_server_binary() -> Path:
    return _find("ENVBUILDER_LLAMA_SERVER", CACHE / "llama-server-0.3.36" / "bin" / "llama-server", "llama-server")


def tools_python() -> Path:
    return _find("ENVBUILDER_TRANSFORMERS_PY", CACHE / "venv-transformers" / "bin" / "python",
                 "the transformers-serve venv")


def make_model(kind: str, out: Path) -> Path:
    """kind 'gguf' -> a GGUF file, 'hf' -> a model folder; written by the tools venv's python."""
    script = TINY / ("make_gguf.py" if kind == "gguf" else "make_hf.py")
    subprocess.run([str(tools_python()), str(script), str(out)], check=True, capture_output=True, timeout=600)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(argv: list[str], port: int, log: Path, *, ready_path: str = "/health",
            deadline_s: float = 180) -> Iterator[ServerFacts]:
    """Start a server child through envbuilder's own process code, yield once it is ready, stop it."""
    command = ServeCommand(argv=tuple(argv), base_url=f"http://127.0.0.1:{port}")
    server = ServerProcess(command, log, echo=False)
    server.start()
    try:
        yield wait_ready(command.base_url, ready_path=ready_path, deadline_s=deadline_s, interval_s=0.25,
                         server=server)
    finally:
        server.stop(10)


def llama_argv(binary: Path, model: Path, port: int) -> list[str]:
    return [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", "4", "-c", "8192",
            "--alias", "tiny-gguf"]


def transformers_argv(model: Path, port: int) -> list[str]:
    serve = tools_python().parent / "transformers"
    return [str(serve), "serve", str(model), "--host", "127.0.0.1", "--port", str(port)]
