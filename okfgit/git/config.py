"""``git config`` lookups, answered as the user's git answers them.

libgit2 reads config files too, but not ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_COUNT`` or every
kind of conditional include, so a value that decides what okfgit does (``okf.run``,
``okf.capture``, ``core.hooksPath``, ``user.name``) is asked of git itself. Asking costs a
process; most repositories set none of okfgit's keys, so ``may_set`` first reads the config
files git would read and asks git only when one of them could set the key (or includes
another file). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from okfgit.errors import UsageError
from okfgit.git import command
from okfgit.local import fastpath

_MORE_SYSTEM_CONFIGS = ("/usr/local/etc/gitconfig",)  # a git built with another prefix reads its own


def may_set(environ: Mapping[str, str], gitdir: Path, key: str) -> bool:
    """Whether any config git would read for the repository at ``gitdir`` could set ``key``.
    No file naming the key's section in a header and the key's name, and none including
    another (nor settings from the environment), means certainly not."""
    if "GIT_CONFIG_COUNT" in environ:
        return True
    section, _, name = key.lower().rpartition(".")
    header = re.compile(rb"\[\s*" + re.escape(section.split(".", 1)[0].encode()) + rb"\b")  # [okf], [okf "x"]
    for path in [*fastpath.config_files(environ, str(gitdir)), *_MORE_SYSTEM_CONFIGS]:
        try:
            with open(path, "rb") as fh:
                data = fh.read().lower()
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return True
        if b"include" in data or (header.search(data) and name.encode() in data):  # any include: git must say
            return True
    return False


def get(environ: Mapping[str, str], key: str, *, cwd: Path, gitdir: Path | None = None,
        as_bool: bool = False) -> str | None:
    """The value of ``key`` for the repository at ``cwd`` (or, outside any, the user's and the
    system's), None when unset; ``as_bool``: ``true`` or ``false`` as git reads a boolean.
    With the repository's ``gitdir``, git is asked only when a config file could set the key.
    UsageError when git rejects the value (not a boolean); IntegrityError when git cannot run."""
    if gitdir is not None and not may_set(environ, gitdir, key):
        return None
    done = command.run(["git", "config", *(["--type=bool"] if as_bool else []), "--get", key], environ, cwd=cwd)
    if done.code == 0:
        return done.out.rstrip("\n")
    if done.code == 1 and not done.out:
        return None
    lines = done.err.strip().splitlines()
    raise UsageError(lines[-1] if lines else f"git config --get {key} exited {done.code}")
