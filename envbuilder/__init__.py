"""envbuilder: a compatibility matrix becomes an ABI-checked lock, a locked image and a smoke-tested server."""

__version__ = "0.1.0"
