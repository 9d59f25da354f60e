"""Project-wide pytest setup: shared fixtures live in tests/support.

Tools a test needs (docker, nvcc, a server, chromium, the network...) go through ONE helper,
`require_tool`, or the `needs_tool(...)` mark that calls it before the test runs. Without the tool
the test skips and says how to get it; with `ENVBUILDER_CI=1` (what `.ci/run` sets) it FAILS
instead, because CI installs every tool and a skip there would hide a test that never ran.
Tests read `ENVBUILDER_CI`, never `CI` (set by many unrelated systems, and by CI's host with a
meaning of its own).

The one opt-in exception is `ENVBUILDER_LARGE_DOWNLOADS=1` (tests/abi/test_inspect_network.py reads a
672 MB torch wheel): it is off by default everywhere, CI included, and named in the README.
"""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["tests.support.fixtures", "tests.support.docker_image"]


def in_ci() -> bool:
    """True under `.ci/run` (ENVBUILDER_CI=1): absent tools fail instead of skipping."""
    return os.environ.get("ENVBUILDER_CI", "") not in ("", "0")


def _absent(name: str, how: str) -> str:
    return f"{name} is not available: {how}"


def require_tool(name: str, available: object, how: str) -> None:
    """Skip (locally) or fail (ENVBUILDER_CI=1) the running test when `name` is not available.

    `available` is anything truthy when the tool is there (a path, a bool); `how` says how to get it.
    """
    __tracebackhide__ = True  # the skip/fail is reported at the caller's line
    if available:
        return
    message = _absent(name, how)
    if in_ci():
        pytest.fail(f"ENVBUILDER_CI=1 and {message}", pytrace=False)
    pytest.skip(message)


def needs_tool(name: str, available: object, how: str) -> pytest.MarkDecorator:
    """`require_tool` as a mark, for a test, a class or a module's `pytestmark`."""
    return pytest.mark.needs_tool(name=name, available=bool(available), how=how)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "needs_tool(name, available, how): see tests/conftest.py require_tool")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Locally, an absent tool's mark becomes a plain skip mark: reported at the test's own line."""
    if in_ci():
        return
    for item in items:
        absent = [m for m in item.iter_markers("needs_tool") if not m.kwargs["available"]]
        if absent:
            item.add_marker(pytest.mark.skip(reason=_absent(absent[0].kwargs["name"], absent[0].kwargs["how"])))


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_tool"):
        require_tool(mark.kwargs["name"], mark.kwargs["available"], mark.kwargs["how"])
