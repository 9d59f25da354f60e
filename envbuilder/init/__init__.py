"""`envbuilder init`: a matrix from what a user already runs (requirements, uv.lock, pylock.toml, pip freeze)."""
