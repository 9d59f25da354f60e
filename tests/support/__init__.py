"""Shared test helpers: a local index server, wheel/sdist builders, a git repo maker, fixtures."""
