"""The projection state: what okfgit last wrote outside the tiers, and from which inputs.

It lives at ``<git common dir>/okf/state.db`` of the project repository, so linked
worktrees share it exactly as they share Claude Code's memory folder. It is the
ownership record (DESIGN.md, "Ownership"): okfgit overwrites or deletes a file only when
the file's current blob OID is the one recorded here, and capture skips any memory file
whose OID is recorded here (the loop guard, rule 3).

Recorded: a format version; the memory folder; per tier label the HEAD commit and the KB
tree used; per target file (absolute path) the blob OID okfgit wrote with its size and
``mtime_ns`` right after writing; and per projected memory file (path relative to the
memory folder) the concept it came from (``okf_id``, tier, KB path, blob OID).

The record is three tables of the repository's store (``local/store.py``), one row per
file, so that a run that changed one concept reads and writes the rows it touches, not
10,000 of them: memory-file records are read when asked for (``MemoryFiles``: one at a
time, the top of the recall order by time, or all at once when a caller goes through them
all), and ``save`` writes the rows that changed in one transaction with the facts the run
staged in the same store (durable: ``synchronous=FULL``; a run killed mid-write leaves the
record as it was, SQLite rolls its journal back). A change to the record removes the
projection's no-op stamp first (``fastpath``): the stamp vouches only for the record it was
written after. A ``state.json`` an earlier okfgit wrote is read once and replaced by the
database.
"""

from __future__ import annotations

import json
import os
from collections.abc import ItemsView, Iterable, Iterator, Mapping, MutableMapping, ValuesView
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from okfgit import TOOL
from okfgit.errors import IntegrityError
from okfgit.local import fastpath, paths
from okfgit.local.store import Store

if TYPE_CHECKING:
    import sqlite3

VERSION = 2
_LEGACY_VERSION = 1  # state.json
_MANY = 64  # single lookups before the rest of the records are read at once


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

    ``oid`` is the concept's blob; ``written`` is the OID of the bytes in the file when they
    differ from the blob (keys moved within Claude's 30-line read), else empty; ``since`` is
    when okfgit first wrote this blob there (the folder's projection generation: 0 for the
    first projection into it, one more for each later one that wrote a file), which ranks
    what changed last first.
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


class Held(NamedTuple):
    """The memory folder's budget: how many concept files it may hold and what said so, how
    many it holds and how many concepts there were to project."""

    limit: int
    source: str
    held: int
    total: int

    @property
    def sentence(self) -> str | None:
        """What the budget left out, in one sentence (None: nothing)."""
        if self.held >= self.total:
            return None
        return (f"Claude Code: the memory folder holds {self.held:,} of {self.total:,} concepts (its budget: "
                f"{self.limit:,} files, {self.source}, and every human-verified one); the other "
                f"{self.total - self.held:,} are reached through the tier indexes, `okfgit cat` and MCP")


class TierInput(NamedTuple):
    """The input one tier gave: its repository, HEAD commit and KB tree."""

    repo: str
    commit: str
    tree: str


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS targets (path TEXT PRIMARY KEY, oid TEXT NOT NULL, size INTEGER NOT NULL,
                                    mtime_ns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS memory_files (name TEXT PRIMARY KEY, okf_id TEXT, tier TEXT NOT NULL, path TEXT NOT NULL,
                                         oid TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                                         since INTEGER NOT NULL, written TEXT NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_by_concept ON memory_files (tier, path);
CREATE INDEX IF NOT EXISTS memory_by_time ON memory_files (mtime_ns);
"""
_COLUMNS = "okf_id, tier, path, oid, size, mtime_ns, since, written"


class _Rows:
    """The memory-file rows of one stored record (none of them read until asked)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def rows(self, where: str = "", args: Iterable[Any] = ()) -> dict[str, MemoryFile]:
        make = tuple.__new__
        return {row[0]: make(MemoryFile, row[1:])
                for row in self.conn.execute(f"SELECT name, {_COLUMNS} FROM memory_files {where}", tuple(args))}

    def names(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT name FROM memory_files")]

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM memory_files").fetchone()[0])


class MemoryFiles(MutableMapping[str, MemoryFile]):
    """The memory-file records by name (relative to the memory folder): a mapping that reads
    its rows from the record when asked, and keeps the changes made to it until ``save``.

    A lookup reads one row; going through all of them (``items``, ``values``, ``len`` ...) or
    more than a few lookups read every row once. ``newer_than`` and ``of_concepts`` read just
    the rows a run that changed a few concepts needs. ``copy`` shares the rows read so far.
    """

    def __init__(self, rows: Mapping[str, MemoryFile] | None = None, store: _Rows | None = None) -> None:
        self._store = store
        self._all: dict[str, MemoryFile] | None = dict(rows) if rows is not None else ({} if store is None else None)
        self._one: dict[str, MemoryFile | None] = {}  # rows looked up one by one (None: no such row)
        self._changed: dict[str, MemoryFile | None] = {}  # name -> the new record, or None: removed
        self._names: dict[str, None] | None = None  # every name, in the record's order, once asked for
        self._lookups = 0

    # -- reading ---------------------------------------------------------------------------

    def _everything(self) -> dict[str, MemoryFile]:
        if self._all is None:
            assert self._store is not None
            rows = self._store.rows()
            for name, rec in self._changed.items():
                if rec is None:
                    rows.pop(name, None)
                else:
                    rows[name] = rec
            self._all = rows
        return self._all

    def get(self, name: str, default: Any = None) -> Any:
        if self._all is not None:
            return self._all.get(name, default)
        if name in self._changed:
            found = self._changed[name]
        else:
            if name not in self._one:
                self._lookups += 1
                if self._lookups > _MANY:
                    return self._everything().get(name, default)
                assert self._store is not None
                self._one[name] = self._store.rows("WHERE name = ?", (name,)).get(name)
            found = self._one[name]
        return default if found is None else found

    def __getitem__(self, name: str) -> MemoryFile:
        found: MemoryFile | None = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[str]:
        """The names (without reading the rows, when none were read yet)."""
        if self._all is not None:
            return iter(list(self._all))
        if self._names is None:
            assert self._store is not None
            names = dict.fromkeys(n for n in self._store.names() if n not in self._changed)
            names.update((n, None) for n, rec in self._changed.items() if rec is not None)
            self._names = names
        return iter(list(self._names))

    def __len__(self) -> int:
        """How many records (counted by the record, when none were read or changed)."""
        if self._all is None and not self._changed and self._store is not None:
            return self._store.count()
        return len(self._everything())

    def __bool__(self) -> bool:
        if self._all is not None:
            return bool(self._all)
        return any(rec is not None for rec in self._changed.values()) or bool(self._store and self._store.count())

    def items(self) -> ItemsView[str, MemoryFile]:
        return self._everything().items()

    def values(self) -> ValuesView[MemoryFile]:
        return self._everything().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MemoryFiles):
            return self._everything() == other._everything()
        if isinstance(other, Mapping):
            return self._everything() == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"MemoryFiles({self._everything()!r})"

    def get_many(self, names: Iterable[str]) -> dict[str, MemoryFile]:
        """The records of ``names`` that exist, read in a few queries (not one each)."""
        wanted = [n for n in dict.fromkeys(names)]
        if self._all is not None or self._store is None:
            everything = self._everything()
            return {n: everything[n] for n in wanted if n in everything}
        unknown = [n for n in wanted if n not in self._changed and n not in self._one]
        for start in range(0, len(unknown), 500):  # SQLite's default limit of host parameters is 999
            chunk = unknown[start:start + 500]
            found = self._store.rows(f"WHERE name IN ({','.join('?' * len(chunk))})", chunk)
            self._one.update({n: found.get(n) for n in chunk})
        out: dict[str, MemoryFile] = {}
        for name in wanted:
            rec = self._changed[name] if name in self._changed else self._one.get(name)
            if rec is not None:
                out[name] = rec
        return out

    def newer_than(self, mtime_ns: int) -> dict[str, MemoryFile]:
        """The records whose recorded time is after ``mtime_ns`` (Claude's recall order's top)."""
        if self._all is not None or self._store is None:
            return {n: r for n, r in self._everything().items() if r.mtime_ns > mtime_ns}
        found = self._store.rows("WHERE mtime_ns > ?", (mtime_ns,))
        return self._overlaid(found, lambda rec: rec.mtime_ns > mtime_ns)

    def of_concepts(self, keys: Iterable[tuple[str, str]]) -> dict[str, MemoryFile]:
        """The records of the files that hold the concepts ``(tier, KB path)``."""
        wanted = set(keys)
        if self._all is not None or self._store is None:
            return {n: r for n, r in self._everything().items() if (r.tier, r.path) in wanted}
        found: dict[str, MemoryFile] = {}
        for tier, path in sorted(wanted):
            found.update(self._store.rows("WHERE tier = ? AND path = ?", (tier, path)))
        return self._overlaid(found, lambda rec: (rec.tier, rec.path) in wanted)

    def _overlaid(self, found: dict[str, MemoryFile], keep: Any) -> dict[str, MemoryFile]:
        self._one.update(found)  # read now: a lookup of one of them reads nothing
        for name, rec in self._changed.items():
            found.pop(name, None)
            if rec is not None and keep(rec):
                found[name] = rec
        return found

    # -- changing --------------------------------------------------------------------------

    def __setitem__(self, name: str, rec: MemoryFile) -> None:
        self._changed[name] = rec
        if self._all is not None:
            self._all[name] = rec
        if self._names is not None:
            self._names[name] = None

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._changed[name] = None
        if self._all is not None:
            del self._all[name]
        if self._names is not None:
            self._names.pop(name, None)

    def pop(self, name: str, default: Any = None) -> Any:
        found = self.get(name)
        if found is None:
            return default
        del self[name]
        return found

    def retain(self, names: set[str]) -> None:
        """Remove every record whose name is not in ``names``."""
        for name in [n for n in self if n not in names]:
            del self[name]

    def copy(self) -> MemoryFiles:
        out = MemoryFiles(store=self._store) if self._store is not None else MemoryFiles(self._all or {})
        out._all = dict(self._all) if self._all is not None else None
        out._one = dict(self._one)
        out._changed = dict(self._changed)
        out._names = dict(self._names) if self._names is not None else None
        return out

    def rewritten(self) -> dict[str, MemoryFile] | None:
        """Every record, when they cannot be saved as changes to the stored rows (none stored)."""
        return self._everything() if self._store is None else None

    def changes(self) -> dict[str, MemoryFile | None]:
        return dict(self._changed)

    def stored(self) -> None:
        """The changes are in the record now: they are its rows."""
        self._one.update(self._changed)
        self._changed = {}


class State:
    """The ownership record of one project repository (see the module docstring).

    ``inputs``: the tier inputs the memory folder is the exact projection of (empty: not
    known). ``recall_top_s`` and ``generation``: Claude's recall order (targets/recall.py),
    the time (seconds) the top files' times were last set below, and the folder's projection
    generation (see MemoryFile.since). ``recall_fresh``: how many files lead the recall order
    as "what changed last"; ``skipped``, ``notes``, ``needs_merge``: what the last projection
    that read every concept said about them (the concepts it did not project, its warnings,
    every needs-merge sibling in those inputs as ``<tier>:<path>``). A run where only
    concepts' bodies changed repeats these without reading every concept again (None: not
    recorded, such a run reads them all). ``stale_at``: epoch seconds when a projected
    concept goes stale (MEMORY.md changes then). ``declined``: the concepts an agent deleted the
    memory file of (``okf_id`` -> the blob capture left it at): projection does not write them
    back while they are deprecated or still that blob (spec/okf-capture-sync.md §7).
    ``rendered``: for an index file a target renders from every concept (Gemini CLI's
    ``MEMORY.md``), the tier inputs it was last rendered from, so that a run with the same
    inputs need not read every concept for it. (A plain class: a dataclass costs every
    command that loads the record its generated code at import.)
    """

    def __init__(self, common_dir: Path, memory_dir: Path | None = None, memory_dir_mtime_ns: int | None = None,
                 inputs: dict[str, TierInput] | None = None, targets: dict[str, FileRecord] | None = None,
                 memory_files: MemoryFiles | Mapping[str, MemoryFile] | None = None,
                 recall_top_s: int | None = None, generation: int = 0, *, recall_fresh: int | None = None,
                 skipped: list[str] | None = None, notes: list[str] | None = None,
                 needs_merge: list[str] | None = None, tool: str = TOOL, warnings: list[str] | None = None,
                 stale_at: int | None = None, declined: dict[str, str] | None = None,
                 store: Store | None = None, held: Held | None = None) -> None:
        self.common_dir = common_dir
        self.store = store if store is not None else Store(common_dir)  # the repository's, where this is kept
        self.memory_dir = memory_dir
        self.memory_dir_mtime_ns = memory_dir_mtime_ns
        self.inputs: dict[str, TierInput] = {} if inputs is None else inputs
        self.targets: dict[str, FileRecord] = {} if targets is None else targets
        self._memory = memory_files if isinstance(memory_files, MemoryFiles) else MemoryFiles(memory_files or {})
        self.recall_top_s = recall_top_s
        self.generation = generation
        self.recall_fresh = recall_fresh
        self.skipped = skipped
        self.notes = notes
        self.needs_merge = needs_merge
        self.held = held
        self.tool = tool
        self.warnings: list[str] = [] if warnings is None else warnings
        self.stale_at = stale_at
        self.declined: dict[str, str] = {} if declined is None else declined
        self.rendered: dict[str, dict[str, TierInput]] = {}
        self._rows: _Rows | None = None  # the stored record this was read from (rows read lazily)
        self._stored: dict[str, Any] = {}  # meta and targets as read, so that save writes what changed
        self._damaged = False  # the database could not be read: save puts a new one in its place

    @property
    def memory_files(self) -> MemoryFiles:
        return self._memory

    @memory_files.setter
    def memory_files(self, value: MemoryFiles | Mapping[str, MemoryFile]) -> None:
        if isinstance(value, MemoryFiles):
            self._memory = value
            return
        current = self._memory.copy()  # a mapping of all records: a change to each stored row
        current.retain(set(value))
        for name, rec in value.items():
            if current.get(name) != rec:
                current[name] = rec
        self._memory = current

    @property
    def path(self) -> Path:
        return paths.state(self.common_dir)

    def derive(self) -> State:
        """A copy to change and save in place of this one (the records it read are shared)."""
        out = State(self.common_dir, self.memory_dir, self.memory_dir_mtime_ns, dict(self.inputs),
                    dict(self.targets), self._memory.copy(), self.recall_top_s, self.generation,
                    recall_fresh=self.recall_fresh, skipped=self.skipped, notes=self.notes,
                    needs_merge=self.needs_merge, tool=self.tool, stale_at=self.stale_at,
                    declined=dict(self.declined), store=self.store, held=self.held)
        out._rows, out._stored, out._damaged = self._rows, self._stored, self._damaged
        out.rendered = dict(self.rendered)
        return out

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

    def wrote_as(self, path: str, size: int, mtime_ns: int) -> bool:
        """okfgit wrote the file at ``path`` and it still has the size and mtime recorded then."""
        found = self.record(path)
        return found is not None and found.size == size and found.mtime_ns == mtime_ns

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

    def adopt_file(self, path: Path, oid: str) -> None:
        """Mark a file outside the memory folder (a Gemini CLI note) whose bytes capture has
        committed as okfgit's, by its OID as it is now: the projection that follows may
        replace it with its concept."""
        try:
            st = os.lstat(path)
        except OSError:
            return
        self.targets[os.path.abspath(path)] = FileRecord(oid, st.st_size, st.st_mtime_ns)

    def projected(self, okf_id: str) -> list[tuple[str, MemoryFile]]:
        """Memory files (name, record) that hold the concept with ``okf_id``."""
        return [(n, m) for n, m in self.memory_files.items() if m.okf_id == okf_id]

    def meta(self) -> dict[str, Any]:
        """Everything but the per-file records, as the database's ``meta`` rows hold it."""
        return {
            "tool": self.tool,
            "memory_dir": str(self.memory_dir) if self.memory_dir is not None else None,
            "memory_dir_mtime_ns": self.memory_dir_mtime_ns,
            "stale_at": self.stale_at,
            "declined": dict(sorted(self.declined.items())),
            "inputs": {k: list(v) for k, v in sorted(self.inputs.items())},
            "recall": [self.recall_top_s, self.generation,
                       *([self.recall_fresh] if self.recall_fresh is not None else [])],
            "merged": ({"skipped": self.skipped, "warnings": self.notes, "needs_merge": self.needs_merge,
                        **({"held": list(self.held)} if self.held is not None else {})}
                       if self.skipped is not None and self.notes is not None and self.needs_merge is not None
                       else None),
            "rendered": {path: {k: list(v) for k, v in sorted(inputs.items())}
                         for path, inputs in sorted(self.rendered.items())},
        }

    def to_json(self) -> dict[str, Any]:
        """The whole record as one JSON document (what ``state.json`` held; the spec's shape)."""
        meta = self.meta()
        return {
            "version": VERSION,
            "tool": self.tool,
            "memory_dir": meta["memory_dir"],
            "memory_dir_mtime_ns": self.memory_dir_mtime_ns,
            **({"stale_at": self.stale_at} if self.stale_at is not None else {}),
            "inputs": self.inputs,
            "targets": self.targets,
            "memory_files": dict(self.memory_files.items()),
            "recall": meta["recall"],
            **({"merged": meta["merged"]} if meta["merged"] is not None else {}),
        }


def load(gitdir: Path, store: Store | None = None) -> State:
    """The projection state of the repository whose git dir is ``gitdir``, read from its store
    (``store``: the one the run already opened there, so that facts and the record are saved
    together).

    A linked worktree's git dir works too: the state lives in the common dir. A missing
    record gives an empty state (okfgit owns nothing yet); a damaged one gives an empty
    state and a warning; one written by a newer okfgit raises IntegrityError, because
    overwriting it would lose ownership records that okfgit cannot read.
    """
    common = Path(fastpath.common_dir(os.path.abspath(gitdir)))
    if store is None:
        store = Store(common)
    state = State(common, store=store)
    if not os.path.lexists(state.path):
        return _load_json(state)
    import sqlite3

    conn = store.connection()
    if conn is None:
        raise IntegrityError(f"cannot read {state.path}")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > VERSION:
            raise IntegrityError(f"{state.path} was written by a newer okfgit (format {version}); upgrade okfgit")
        if version == 0 and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
            return _load_json(state)  # a store of facts only: no record written yet
        if version != VERSION:
            raise ValueError(f"unknown format {version!r}")
        meta = {key: json.loads(value) for key, value in conn.execute("SELECT key, value FROM meta")}
        targets = {path: FileRecord(oid, size, mtime) for path, oid, size, mtime
                   in conn.execute("SELECT path, oid, size, mtime_ns FROM targets")}
        state = _from_meta(common, meta, targets, store)
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):  # another okfgit's write that outlasted the wait
            raise IntegrityError(f"cannot read {state.path}: {exc}") from exc
        return _damaged(State(common, store=store), exc)
    except (sqlite3.DatabaseError, ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        return _damaged(State(common, store=store), exc)
    rows = _Rows(conn)
    state._memory = MemoryFiles(store=rows)
    state._rows = rows
    state._stored = {"meta": state.meta(), "targets": dict(targets)}
    return state


def _from_meta(common: Path, meta: Mapping[str, Any], targets: dict[str, FileRecord], store: Store) -> State:
    memory_dir = meta.get("memory_dir")
    mtime = meta.get("memory_dir_mtime_ns")
    stale = meta.get("stale_at")
    state = State(
        common_dir=common,
        memory_dir=Path(memory_dir) if isinstance(memory_dir, str) else None,
        memory_dir_mtime_ns=int(mtime) if mtime is not None else None,
        stale_at=int(stale) if stale is not None else None,
        declined={str(k): str(v) for k, v in dict(meta.get("declined") or {}).items()},
        inputs={str(k): TierInput(*v) for k, v in dict(meta.get("inputs") or {}).items()},
        targets=targets,
        tool=str(meta.get("tool", "")),
        store=store,
    )
    recall = meta.get("recall")
    if isinstance(recall, list) and len(recall) in (2, 3):
        state.recall_top_s = int(recall[0]) if isinstance(recall[0], int) else None
        state.generation = int(recall[1]) if isinstance(recall[1], int) else 0
        if len(recall) == 3 and isinstance(recall[2], int):
            state.recall_fresh = recall[2]
    rendered = meta.get("rendered")
    if isinstance(rendered, dict):
        try:
            state.rendered = {str(path): {str(k): TierInput(*v) for k, v in dict(inputs).items()}
                              for path, inputs in rendered.items()}
        except (TypeError, ValueError):
            state.rendered = {}  # of another shape: every index is rendered again
    merged = meta.get("merged")
    if isinstance(merged, dict) and all(isinstance(merged.get(k), list) for k in ("skipped", "warnings", "needs_merge")):
        state.skipped = [str(s) for s in merged["skipped"]]
        state.notes = [str(w) for w in merged["warnings"]]
        state.needs_merge = [str(p) for p in merged["needs_merge"]]
        held = merged.get("held")
        if isinstance(held, list) and len(held) == 4:
            state.held = Held(int(held[0]), str(held[1]), int(held[2]), int(held[3]))
    return state


def _damaged(state: State, exc: Exception) -> State:
    state.warnings.append(f"{state.path} is damaged ({exc}); treating every target file as not written by okfgit")
    state._damaged = True
    return state


def _load_json(state: State) -> State:
    """The record as an earlier okfgit kept it (``state.json``); saving it writes the database."""
    legacy = paths.legacy_state(state.common_dir)
    try:
        raw = legacy.read_bytes()
    except FileNotFoundError:
        return state
    except OSError as exc:
        raise IntegrityError(f"cannot read {legacy}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        version = data.get("version")
        if isinstance(version, int) and version > VERSION:
            raise IntegrityError(f"{legacy} was written by a newer okfgit (format {version}); upgrade okfgit")
        if version != _LEGACY_VERSION:
            raise ValueError(f"unknown format {version!r}")
        targets = {str(k): FileRecord(*v) for k, v in data["targets"].items()}
        out = _from_meta(state.common_dir, data, targets, state.store)
        records = {str(k): MemoryFile(*v) for k, v in data["memory_files"].items()}
        for rec in records.values():
            if not (isinstance(rec.oid, str) and isinstance(rec.size, int) and isinstance(rec.mtime_ns, int)):
                raise ValueError(f"bad memory file record {list(rec)!r}")
        out._memory = MemoryFiles(records)
        return out
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        state.warnings.append(f"{legacy} is damaged ({exc}); treating every target file as not written by okfgit")
        return state


def save(state: State) -> bool:
    """Write what changed in the record since it was read, with the facts and records the run
    staged in the same store, in one durable transaction (the whole record when it was not
    read from the database). True when it wrote the record."""
    memory = state.memory_files
    whole = memory.rewritten()
    if state._rows is None or whole is not None:
        return _save_whole(state, whole if whole is not None else dict(memory.items()))
    meta = state.meta()
    stored_meta: dict[str, Any] = state._stored.get("meta", {})
    meta_rows = [(k, json.dumps(v, sort_keys=True)) for k, v in meta.items() if stored_meta.get(k) != v]
    stored_targets: dict[str, FileRecord] = state._stored.get("targets", {})
    target_rows = [(p, *rec) for p, rec in state.targets.items() if stored_targets.get(p) != rec]
    gone_targets = [(p,) for p in stored_targets if p not in state.targets]
    changes = memory.changes()
    if not (meta_rows or target_rows or gone_targets or changes):
        state.store.save()  # the facts alone
        return False

    def write(conn: sqlite3.Connection) -> None:
        _unstamp(state)
        conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", meta_rows)
        conn.executemany("INSERT OR REPLACE INTO targets (path, oid, size, mtime_ns) VALUES (?, ?, ?, ?)", target_rows)
        conn.executemany("DELETE FROM targets WHERE path = ?", gone_targets)
        conn.executemany("DELETE FROM memory_files WHERE name = ?", [(n,) for n, rec in changes.items() if rec is None])
        conn.executemany(f"INSERT OR REPLACE INTO memory_files (name, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         [(n, *rec) for n, rec in changes.items() if rec is not None])

    state.store.save(write)
    state._stored = {"meta": meta, "targets": dict(state.targets)}
    memory.stored()
    return True


def _unstamp(state: State) -> None:
    """The projection's no-op stamp vouches for the record it was written after: a change to
    the record removes it before the change is committed (the run that projects writes a new one)."""
    fastpath.save_stamp(str(state.common_dir), None)


def _write_whole(conn: sqlite3.Connection, state: State, records: Mapping[str, MemoryFile]) -> None:
    _unstamp(state)
    for statement in _SCHEMA.strip().split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("DELETE FROM meta")
    conn.execute("DELETE FROM targets")
    conn.execute("DELETE FROM memory_files")
    conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                     [(k, json.dumps(v, sort_keys=True)) for k, v in state.meta().items()])
    conn.executemany("INSERT INTO targets (path, oid, size, mtime_ns) VALUES (?, ?, ?, ?)",
                     [(p, *rec) for p, rec in sorted(state.targets.items())])
    conn.executemany(f"INSERT INTO memory_files (name, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(n, *rec) for n, rec in sorted(records.items())])
    conn.execute(f"PRAGMA user_version = {VERSION}")


def _save_whole(state: State, records: Mapping[str, MemoryFile]) -> bool:
    """Every record, replacing what the store held (or ``state.json``), in one transaction
    with the run's staged facts. A database that could not be read is removed first (what
    it held is lost either way)."""
    if state._damaged:
        state.store.close()
        try:
            state.path.unlink(missing_ok=True)
        except OSError as exc:
            raise IntegrityError(f"cannot write {state.path}: {exc.strerror or exc}") from exc
        state.store.reopen()
    state.store.save(lambda conn: _write_whole(conn, state, records))
    paths.legacy_state(state.common_dir).unlink(missing_ok=True)  # okfgit's own earlier record, now in the database
    reopened = load(state.common_dir, state.store)
    state._rows, state._stored, state._damaged = reopened._rows, reopened._stored, False
    state._memory = reopened._memory
    return True
