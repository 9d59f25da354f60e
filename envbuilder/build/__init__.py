"""Locked images: render a Dockerfile and context from a lock, build it through BuildKit, verify it.

render (pure: lock + matrix -> files) -> driver (docker CLI with BuildKit) -> engine (docker-py
queries of the result) -> verify (inside the image: installed == lock).
"""
