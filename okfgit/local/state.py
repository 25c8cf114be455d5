"""The projection state: what okfgit last wrote outside the tiers, and from which inputs.

It lives at ``<git common dir>/okf/state.json`` of the project repository, so linked
worktrees share it exactly as they share Claude Code's memory folder. It is the
ownership record (DESIGN.md, "Ownership"): okfgit overwrites or deletes a file only when
the file's current blob OID is the one recorded here, and capture skips any memory file
whose OID is recorded here (the loop guard, rule 3).

Recorded: a format version; the memory folder; per tier label the HEAD commit and the KB
tree used; per target file (absolute path) the blob OID okfgit wrote with its size and
``mtime_ns`` right after writing; and per projected memory file (path relative to the
memory folder) the concept it came from (``okf_id``, tier, KB path, blob OID).

Pure Python and JSON only, so capture and the hooks can read it cheaply.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping
from typing import Any, NamedTuple

from okfgit import TOOL, fsutil
from okfgit.local import fastpath, paths
from okfgit.errors import IntegrityError

VERSION = 1


class FileRecord(NamedTuple):
    """A file okfgit wrote: the blob OID of its bytes, its size and mtime right after."""

    oid: str
    size: int
    mtime_ns: int

    def matches(self, st: os.stat_result) -> bool:
        """The file still has the size and mtime it had when okfgit wrote it."""
        return st.st_size == self.size and st.st_mtime_ns == self.mtime_ns


class MemoryFile(NamedTuple):
    """A projected memory file: the concept it holds and the file's stat.

    A tuple, so that 10,000 of them load and save quickly; on disk it is the JSON array
    ``[okf_id, tier, path, oid, size, mtime_ns, since, written]``. ``oid`` is the concept's
    blob; ``written`` is the OID of the bytes in the file when they differ from the blob
    (keys moved within Claude's 30-line read), else empty; ``since`` is when okfgit first
    wrote this blob there (the folder's projection generation: 0 for the first projection
    into it, one more for each later one that wrote a file), which ranks what changed last first.
    """

    okf_id: str | None
    tier: str
    path: str
    oid: str
    size: int
    mtime_ns: int
    since: int = 0
    written: str = ""

    @property
    def file_oid(self) -> str:
        """The blob OID of the bytes okfgit put in the file."""
        return self.written or self.oid

    @property
    def record(self) -> FileRecord:
        return FileRecord(self.file_oid, self.size, self.mtime_ns)

    @property
    def citation(self) -> str:
        return f"{self.tier}:{self.path}@{self.oid[:7]}"

    def get(self, key: str, default: Any = None) -> Any:
        """Mapping-style access to a field (``record.get("oid")``)."""
        return getattr(self, key) if key in self._fields else default


class TierInput(NamedTuple):
    """The input one tier gave: its repository, HEAD commit and KB tree."""

    repo: str
    commit: str
    tree: str


@dataclass
class State:
    """The ownership record of one project repository (see the module docstring)."""

    common_dir: Path
    memory_dir: Path | None = None
    memory_dir_mtime_ns: int | None = None
    # the tier inputs the memory folder is the exact projection of (empty: not known)
    inputs: dict[str, TierInput] = field(default_factory=dict)
    targets: dict[str, FileRecord] = field(default_factory=dict)
    memory_files: dict[str, MemoryFile] = field(default_factory=dict)
    # Claude's recall order (targets/recall.py): the time (seconds) the top files' times were
    # last set below, and the folder's projection generation (see MemoryFile.since).
    recall_top_s: int | None = None
    generation: int = 0
    # How many files lead the recall order as "what changed last" (targets/recall.py), and
    # what the last projection that read every concept said about them: the concepts it did
    # not project and its warnings. A run where only concepts' bodies changed repeats these
    # without reading every concept again (None: not recorded, such a run reads them all).
    recall_fresh: int | None = None
    skipped: list[str] | None = None
    notes: list[str] | None = None
    needs_merge: list[str] | None = None  # every needs-merge sibling in those inputs ("<tier>:<path>")
    tool: str = TOOL
    warnings: list[str] = field(default_factory=list)
    stale_at: int | None = None  # epoch seconds when a projected concept goes stale (MEMORY.md changes)

    @property
    def path(self) -> Path:
        return paths.state(self.common_dir)

    def memory_name(self, path: str | Path) -> str | None:
        """``path`` relative to the recorded memory folder (POSIX), or None outside it."""
        if self.memory_dir is None:
            return None
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.memory_dir)
        except ValueError:
            return None
        return rel.as_posix() if rel.parts else None

    def memory_file(self, path: str | Path) -> MemoryFile | None:
        """The projected memory file at ``path``: absolute, or relative to the memory folder."""
        name = self.memory_name(path) if os.path.isabs(path) else Path(path).as_posix()
        return self.memory_files.get(name) if name is not None else None

    def record(self, path: str | Path) -> FileRecord | None:
        """What okfgit last wrote at ``path`` (a memory file name relative to the memory
        folder, or an absolute path of any target file)."""
        found = self.memory_file(path)
        if found is not None:
            return found.record
        return self.targets.get(os.path.abspath(path)) if os.path.isabs(path) else None

    def wrote(self, path: str | Path, oid: str) -> bool:
        """True when okfgit itself wrote the bytes with blob OID ``oid`` at ``path``
        (relative to the memory folder, or absolute).

        Capture's loop guard: a file for which this is true is okfgit's projection, not
        something an agent wrote, and must be skipped.
        """
        found = self.record(path)
        return found is not None and found.oid == oid

    def adopt(self, files: Mapping[str, str], memory_dir: Path | None = None) -> None:
        """Mark memory files (name relative to the memory folder -> blob OID) as okfgit's.

        Capture calls this once the agent's bytes are in a commit: from then on the file is
        a copy of knowledge in the KB, so the projection that follows may replace it with the
        concept. Ownership is by OID, so a file that changed again since capture read it
        stays the agent's. ``memory_dir`` is used when no projection has recorded a folder.

        The folder now holds files that are not the projection of ``inputs``, so the inputs
        are forgotten: ``inputs`` only ever names what the folder is the exact projection of.
        """
        if not files:
            return
        if self.memory_dir is None:
            if memory_dir is None:
                return
            self.memory_dir = Path(os.path.abspath(memory_dir))
        for name, oid in files.items():
            try:
                st = (self.memory_dir / name).lstat()
            except OSError:
                continue
            old = self.memory_files.get(name)
            self.memory_files[name] = MemoryFile(
                old.okf_id if old else None, old.tier if old else "", old.path if old else "", oid,
                st.st_size, st.st_mtime_ns, old.since if old else 0,
            )
        self.inputs = {}

    def projected(self, okf_id: str) -> list[tuple[str, MemoryFile]]:
        """Memory files (name, record) that hold the concept with ``okf_id``."""
        return [(n, m) for n, m in self.memory_files.items() if m.okf_id == okf_id]

    def to_json(self) -> dict[str, Any]:
        """The JSON document: records are arrays in their fields' order (see the spec)."""
        return {
            "version": VERSION,
            "tool": self.tool,
            "memory_dir": str(self.memory_dir) if self.memory_dir is not None else None,
            "memory_dir_mtime_ns": self.memory_dir_mtime_ns,
            **({"stale_at": self.stale_at} if self.stale_at is not None else {}),
            "inputs": self.inputs,
            "targets": self.targets,
            "memory_files": self.memory_files,
            "recall": [self.recall_top_s, self.generation,
                       *([self.recall_fresh] if self.recall_fresh is not None else [])],
            **({"merged": {"skipped": self.skipped, "warnings": self.notes, "needs_merge": self.needs_merge}}
               if self.skipped is not None and self.notes is not None and self.needs_merge is not None else {}),
        }


def load(gitdir: Path) -> State:
    """The projection state of the repository whose git dir is ``gitdir``.

    A linked worktree's git dir works too: the state lives in the common dir. A missing
    file gives an empty state (okfgit owns nothing yet); a damaged one gives an empty
    state and a warning; one written by a newer okfgit raises IntegrityError, because
    overwriting it would lose ownership records that okfgit cannot read.
    """
    common = Path(fastpath.common_dir(os.path.abspath(gitdir)))
    state = State(common)
    try:
        raw = state.path.read_bytes()
    except FileNotFoundError:
        return state
    except OSError as exc:
        raise IntegrityError(f"cannot read {state.path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        version = data.get("version")
        if isinstance(version, int) and version > VERSION:
            raise IntegrityError(
                f"{state.path} was written by a newer okfgit (format {version}); upgrade okfgit"
            )
        if version != VERSION:
            raise ValueError(f"unknown format {version!r}")
        return _parse(common, data)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        state.warnings.append(
            f"{state.path} is damaged ({exc}); treating every target file as not written by okfgit"
        )
        return state


def _parse(common: Path, data: dict[str, Any]) -> State:
    memory_dir = data.get("memory_dir")
    mtime = data.get("memory_dir_mtime_ns")
    state = State(
        common_dir=common,
        memory_dir=Path(memory_dir) if isinstance(memory_dir, str) else None,
        memory_dir_mtime_ns=int(mtime) if mtime is not None else None,
        stale_at=int(data["stale_at"]) if data.get("stale_at") is not None else None,
        inputs={str(k): TierInput(*v) for k, v in data["inputs"].items()},
        targets={str(k): FileRecord(*v) for k, v in data["targets"].items()},
        memory_files={str(k): MemoryFile(*v) for k, v in data["memory_files"].items()},
        tool=str(data.get("tool", "")),
    )
    recall = data.get("recall")
    if isinstance(recall, list) and len(recall) in (2, 3):
        state.recall_top_s = int(recall[0]) if isinstance(recall[0], int) else None
        state.generation = int(recall[1]) if isinstance(recall[1], int) else 0
        if len(recall) == 3 and isinstance(recall[2], int):
            state.recall_fresh = recall[2]
    merged = data.get("merged")
    if isinstance(merged, dict) and all(isinstance(merged.get(k), list) for k in ("skipped", "warnings", "needs_merge")):
        state.skipped = [str(s) for s in merged["skipped"]]
        state.notes = [str(w) for w in merged["warnings"]]
        state.needs_merge = [str(p) for p in merged["needs_merge"]]
    for rec in state.memory_files.values():
        if not (isinstance(rec.oid, str) and isinstance(rec.size, int) and isinstance(rec.mtime_ns, int)):
            raise ValueError(f"bad memory file record {list(rec)!r}")
    return state


def dumps(state: State) -> bytes:
    """The bytes ``save`` writes (compact JSON: the file can hold 10,000 records)."""
    text = json.dumps(state.to_json(), separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return text.encode("utf-8") + b"\n"


def save(state: State) -> bool:
    """Write the state atomically and durably (it is the only record of what okfgit owns),
    unless the file already holds exactly these bytes. True when it wrote."""
    data = dumps(state)
    try:
        if state.path.read_bytes() == data:
            return False
    except OSError:
        pass
    fsutil.atomic_write(state.path, data, fsync=True)
    return True
