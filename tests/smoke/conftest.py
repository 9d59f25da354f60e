"""Session-wide tiny models and real servers for the smoke tests (see llm_servers.py)."""

import pytest
from llm_servers import free_port, llama_argv, llama_server_binary, make_model, running, transformers_argv


@pytest.fixture(scope="session")
def gguf_model(tmp_path_factory):
    return make_model("gguf", tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture(scope="session")
def hf_model(tmp_path_factory):
    return make_model("hf", tmp_path_factory.mktemp("hf") / "tiny-llama")


@pytest.fixture(scope="module")
def llama_server(gguf_model, tmp_path_factory):
    binary = llama_server_binary()
    port = free_port()
    with running(llama_argv(binary, gguf_model, port), port, tmp_path_factory.mktemp("llama") / "server.log") as facts:
        yield facts


@pytest.fixture(scope="module")
def transformers_server(hf_model, tmp_path_factory):
    port = free_port()
    with running(transformers_argv(hf_model, port), port, tmp_path_factory.mktemp("tf") / "server.log") as facts:
        yield facts
