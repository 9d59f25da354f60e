"""Serve profiles -> the exact server command; run it as a child, wait until ready."""
