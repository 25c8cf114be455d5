"""The one exception root. Each error carries the exit code the CLI maps it to.

Exit codes (spec/okf-cli.md): 0 ok, 2 usage or validation error, 3 unwritable
target or integrity failure (fail-closed: nothing half-written); under ``--quiet`` any
failure is 1. ``cli.main`` is the one place that maps them.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTEGRITY = 3
EXIT_QUIET_FAILURE = 1  # any failure under --quiet (agent hooks: Claude Code reads 2 as "block")


class OkfError(Exception):
    """Root of every error okfgit raises on purpose."""

    exit_code: int = EXIT_USAGE


class UsageError(OkfError):
    """Bad arguments, unknown names, ambiguous references."""

    exit_code = EXIT_USAGE


class ValidationError(OkfError):
    """Input that is not valid OKF (bad frontmatter, bad YAML, not UTF-8...)."""

    exit_code = EXIT_USAGE


class IntegrityError(OkfError):
    """A write that cannot be done safely: nothing was changed."""

    exit_code = EXIT_INTEGRITY


class RepoStateError(IntegrityError):
    """The repository is mid-merge/rebase, detached, or has uncommitted edits in the way."""


class UnwritableError(IntegrityError):
    """A target file or folder cannot be written."""


class BusyError(IntegrityError):
    """Another writer (an okfgit write, a git process holding index.lock) is in the way: nothing was changed."""


class RefMoved(BusyError):
    """The branch moved while okfgit was planning or writing (its compare-and-swap lost):
    nothing was changed, and a plan made again on the new head may well succeed."""


class RecoveryPending(IntegrityError):
    """The commit landed (the ref moved) but updating the working tree or index did not finish.

    Not "nothing was changed": the message names the commit, and the next okfgit command
    finishes the update from the write journal.
    """
