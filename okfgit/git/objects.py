"""What every reader of a repository returns: tree entries, changes between trees, blob OIDs.

Standard library only: the no-op paths (and ``local/``) hash files without loading libgit2.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

LINK_MODE = 0o120000
FILE_MODE = 0o100644
EXEC_MODE = 0o100755
TREE_MODE = 0o040000
SUBMODULE_MODE = 0o160000
ZERO = "0" * 40
_FILE_MODES = frozenset((FILE_MODE, EXEC_MODE))


class Entry(NamedTuple):
    """A tree entry: its OID and file mode (symlinks have mode 0o120000)."""

    oid: str
    mode: int

    @property
    def is_link(self) -> bool:
        return self.mode == LINK_MODE

    @property
    def is_file(self) -> bool:
        """A regular file, executable or not."""
        return self.mode in _FILE_MODES

    @property
    def is_blob(self) -> bool:
        """A file or a symlink: an entry whose OID names a blob (not a folder or a submodule)."""
        return self.is_file or self.is_link

    @property
    def is_tree(self) -> bool:
        return self.mode == TREE_MODE


NOT_UTF8 = ".not-utf8"  # what ends a path that is not UTF-8 text, as every reader is given it


def shown(name: str) -> str:
    """A file name as text any report can carry: a byte the file system or a tree gave that
    is not UTF-8 (Python holds it as a lone surrogate, which no UTF-8 output or database
    takes) written as ``\\xe9``."""
    if name.isascii():
        return name
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return name


def text_path(path: str) -> str:
    """``path`` (a tree's or the file system's) as every reader is given it: as it is when it
    is UTF-8 text; else ``shown`` with ``NOT_UTF8`` appended, so that it is no ``.md`` file,
    nothing reads or writes it as knowledge, and doctor names it."""
    text = shown(path)
    return path if text == path else text + NOT_UTF8


class Change(NamedTuple):
    """One path changed between two trees (``old``/``new`` None when added/removed)."""

    path: str
    old: str | None
    new: str | None


def blob_oid(data: bytes) -> str:
    """The git blob OID of ``data`` (what ``git hash-object`` prints)."""
    return sha1_hex(b"blob %d\0" % len(data) + data)


_SHA1: Callable[[bytes], Any] | None = None


def sha1_hex(data: bytes) -> str:
    """The SHA-1 of ``data`` in hex, from the interpreter's own ``_sha1`` module where there
    is one (``hashlib`` loads OpenSSL, which a run that hashes one blob need not pay for)."""
    global _SHA1
    if _SHA1 is None:
        try:
            from _sha1 import sha1  # type: ignore[import-not-found]
        except ImportError:  # an interpreter built without it (hashlib then has one)
            from hashlib import sha1
        _SHA1 = sha1
    return str(_SHA1(data).hexdigest())
