"""The error types every command maps to an exit code.

One place decides what the user sees: the CLI catches these and prints the message, never a
traceback. Modules raise the most specific class; the message must say what to do.
"""

from __future__ import annotations


class EnvbuilderError(Exception):
    """Base class; carries the exit code the CLI uses."""

    exit_code = 1


class CheckFailed(EnvbuilderError):
    """A check said no: unsatisfiable matrix, a rule rejects, stale lock, threshold missed."""

    exit_code = 1


class BadInput(EnvbuilderError):
    """The user's input is wrong; the message names the file, line and key where it can."""

    exit_code = 2


class Unreachable(EnvbuilderError):
    """Something needed is unreachable (index, docker engine, GPU, server); says what to do."""

    exit_code = 3
