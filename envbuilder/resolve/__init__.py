"""Resolution for a target environment: resolvelib + a factory that knows indexes and ABI facets."""

from envbuilder.resolve.resolver import Resolution, resolve

__all__ = ["Resolution", "resolve"]
