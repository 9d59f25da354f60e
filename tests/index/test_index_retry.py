"""Flaky and dead indexes: retried with backoff, then a clear Unreachable (exit 3)."""

from __future__ import annotations

import pytest

from envbuilder.errors import Unreachable
from envbuilder.index import IndexClient
from tests.support.dists import make_wheel
from tests.support.index_server import IndexServer


@pytest.fixture
def served(index_server: IndexServer) -> IndexServer:
    index_server.pep658 = False
    index_server.add(make_wheel("demo", "1.0", requires_dist=["dep"]))
    return index_server


def _client(server: IndexServer, cache, retries: int = 3) -> IndexClient:
    return IndexClient({"pypi": server.url}, cache, max_workers=2, retries=retries, backoff=0.01)


def test_dropped_connections_are_retried(served: IndexServer, index_cache):
    served.drop_connections(2)
    with _client(served, index_cache) as client:
        (file,) = client.files("demo")
        served.drop_connections(2)
        assert client.metadata(file).requires_dist == ("dep",)
        assert client.http.stats.retries == 4
    assert [r.status for r in served.requests("/simple/demo/")] == [0, 0, 200]


def test_5xx_is_retried(served: IndexServer, index_cache):
    served.fail_with(503, 2)
    with _client(served, index_cache) as client:
        assert len(client.files("demo")) == 1
    assert [r.status for r in served.requests("/simple/demo/")] == [503, 503, 200]


def test_an_index_that_always_drops_gives_a_clear_exit_3(served: IndexServer, index_cache):
    served.drop_connections(None)
    with _client(served, index_cache, retries=2) as client, pytest.raises(Unreachable) as err:
        client.files("demo")
    message = str(err.value)
    assert err.value.exit_code == 3
    assert f"{served.url}/demo/" in message and "after 3 attempts" in message
    assert "PIP_INDEX_URL" in message and "--offline" in message and "proxy" in message
    assert len(served.requests("/simple/demo/")) == 3


def test_nothing_listening_gives_exit_3(index_cache):
    with IndexClient({"pypi": "http://127.0.0.1:9/simple"}, index_cache, retries=1, backoff=0.01) as client:
        with pytest.raises(Unreachable, match="ConnectError"):
            client.files("demo")


def test_a_403_is_not_retried_and_names_credentials(served: IndexServer, index_cache):
    served.fail_with(403, 1)
    with _client(served, index_cache) as client, pytest.raises(Unreachable, match="HTTP 403.*credentials"):
        client.files("demo")
    assert len(served.requests("/simple/demo/")) == 1


def test_async_failures_surface_from_the_future(served: IndexServer, index_cache):
    served.drop_connections(None)
    with _client(served, index_cache, retries=1) as client:
        future = client.files_async("demo")
        with pytest.raises(Unreachable):
            future.result()
        served.drop_connections(0)
        assert len(client.files("demo")) == 1  # a failure is not memoised: the next call retries


def test_credentials_in_the_index_url_never_reach_messages(served: IndexServer, index_cache):
    from envbuilder.index.http import redact

    url = served.url.replace("http://", "http://alice:s3cret-token@")
    served.drop_connections(None)
    with IndexClient({"pypi": url}, index_cache, retries=0, backoff=0.01) as client:
        with pytest.raises(Unreachable) as err:
            client.files("demo")
    assert "s3cret-token" not in str(err.value) and "alice:***@127.0.0.1" in str(err.value)
    assert redact("https://__token__@host.example.org/simple") == "https://***@host.example.org/simple"
    assert redact("https://host.example.org/simple") == "https://host.example.org/simple"
