"""Project-wide pytest setup: shared fixtures live in tests/support."""

pytest_plugins = ["tests.support.fixtures"]
