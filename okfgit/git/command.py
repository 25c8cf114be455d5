"""The command line, started in one place: ``run``.

okfgit reads and writes repositories through libgit2 (``repository``). It starts ``git`` only
where libgit2 would behave differently from the user's git: fetch and push with the user's
credential helpers and ssh (``transport``), ``git config`` lookups that must honour includes,
conditional includes and ``GIT_CONFIG_*`` (``config``), refreshing the stat data of the index
entries a commit wrote (``commit``), and where the hook scripts live. ``gh`` opens pull
requests; it is started here too, under the same rule.

One environment rule for every process, as pre-commit's ``no_git_env``: of the ``GIT_*``
variables only an allow-list passes (identity, config locations, transport settings). The
ones a git hook sets for its own repository (``GIT_DIR``, ``GIT_INDEX_FILE``,
``GIT_WORK_TREE``...) never reach a git okfgit runs on a tier.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from okfgit.errors import IntegrityError

TIMED_OUT = 124  # the exit code ``run`` reports when the deadline passed (as timeout(1) does)
_KEPT = frozenset((
    "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
    "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_COUNT",
    "GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_SSH_VARIANT", "GIT_SSL_CAINFO", "GIT_SSL_NO_VERIFY",
    "GIT_HTTP_PROXY_AUTHMETHOD", "GIT_ALLOW_PROTOCOL", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT",
))
_KEPT_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")


class Result(NamedTuple):
    """What a process did: its exit code and its output, decoded as UTF-8 (``stdout``: as written)."""

    code: int
    out: str
    err: str
    stdout: bytes = b""


def environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with only the allowed ``GIT_*`` variables (see the module doc)."""
    return {k: v for k, v in environ.items()
            if not k.startswith("GIT_") or k in _KEPT or k.startswith(_KEPT_PREFIXES)}


def run(argv: Sequence[str], environ: Mapping[str, str], *, cwd: Path | None = None, input: bytes | None = None,
        timeout_s: float | None = None) -> Result:
    """Run ``argv`` (``git ...`` or ``gh ...``) in ``cwd`` with ``environment(environ)``.

    Output goes to temporary files, not pipes: a helper git started that outlives it (an SSH
    connection master) may keep a pipe open, and waiting for its end would wait on it. With
    ``timeout_s`` the process runs in its own group, killed whole at the deadline (exit code
    ``TIMED_OUT``). IntegrityError when the program cannot be started at all.
    """
    import subprocess  # a run that starts no process does not load these
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as given:
        if input is not None:
            given.write(input)
            given.seek(0)
        stdin = given if input is not None else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(list(argv), cwd=cwd, env=environment(environ), stdin=stdin, stdout=out,
                                    stderr=err, start_new_session=timeout_s is not None)
        except OSError as exc:
            raise IntegrityError(f"cannot run {argv[0]} ({exc.strerror or exc}): install {argv[0]} or put it "
                                 "on PATH; nothing was changed") from exc
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
            return Result(TIMED_OUT, "", f"no answer within {timeout_s:g} s")
        out.seek(0)
        err.seek(0)
        raw = out.read()
        return Result(code, raw.decode("utf-8", "replace"), err.read().decode("utf-8", "replace"), raw)
