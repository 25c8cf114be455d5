"""``state.db``: the one store of what okfgit keeps about a repository outside its tree.

Every repository okfgit reads or writes as a tier keeps one SQLite database (stdlib
``sqlite3``) at ``<git common dir>/okf/state.db``, shared by its linked worktrees. It holds:

- the **ownership record** (``local/state.py``: the ``meta``, ``targets`` and
  ``memory_files`` tables), in the project repository only;
- **derived facts** (``knowledge/catalog.py``): for each kind of fact (a concept's card,
  its links, what doctor finds in a file on its own, what ``index`` needs of an
  ``index.md``) and each tier, one ``facts`` row per KB path (the blob OID, and the fact as
  JSON or why the blob is no concept), and one ``catalogs`` row naming the KB tree those
  rows describe, the commit it was read at and the code that computed them;
- the cards' **lookup**: a row per card by path, ``okf_id``, file stem, ``name`` and title,
  and an FTS5 index of its words (when this SQLite has FTS5), a catalog of kind ``LOOKUP``,
  so that a reader asks for the few cards it answers from;
- **records** (the ``records`` table, by name): the last git index found in step with HEAD
  (``local/index_stamp.py``), the global tier's exchanges with its remote
  (``local/exchange.py``), doctor's errors at a tree.

Facts are a pure function of a blob, its path and the code that reads it, so they carry
no version of their own: ``code_key`` names okfgit's code (its version and the size and
mtime of every module, the rule Python itself uses to find stale bytecode), and a catalog
written by other code is not read. Facts and records can be deleted at any time; only the
ownership record cannot be rebuilt from git.

A run opens each repository's store once (``Stores``), reads the rows it asks for, stages
what it learns, and writes once at the end: one transaction per repository, into which
``state.save`` puts the ownership record too. A facts-only write never fails a command
(it is a cache); the ownership record's does. Standard library only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from okfgit import TOOL
from okfgit.errors import IntegrityError
from okfgit.local import paths

if TYPE_CHECKING:
    import sqlite3

BUSY_S = 10.0  # how long a reader or writer waits for another okfgit's write of the store

# The tables besides the ownership record's. CREATE ... IF NOT EXISTS: an older okfgit's
# database gains them on the first write, and an older okfgit reading a newer one ignores them.
SCHEMA = """
CREATE TABLE IF NOT EXISTS catalogs (kind TEXT NOT NULL, tier TEXT NOT NULL, tree TEXT NOT NULL,
                                     commit_oid TEXT, code TEXT NOT NULL,
                                     PRIMARY KEY (kind, tier)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS facts (kind TEXT NOT NULL, tier TEXT NOT NULL, path TEXT NOT NULL, oid TEXT NOT NULL,
                                  value TEXT, problem TEXT, PRIMARY KEY (kind, tier, path)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS lookup (id INTEGER PRIMARY KEY, tier TEXT NOT NULL, path TEXT NOT NULL, okf_id TEXT,
                                   stem TEXT NOT NULL, name TEXT NOT NULL, title TEXT NOT NULL, words TEXT NOT NULL,
                                   status TEXT NOT NULL, type TEXT NOT NULL, tags TEXT NOT NULL,
                                   UNIQUE (tier, path));
CREATE INDEX IF NOT EXISTS lookup_okf_id ON lookup (okf_id, tier);
CREATE INDEX IF NOT EXISTS lookup_stem ON lookup (stem, tier);
CREATE INDEX IF NOT EXISTS lookup_name ON lookup (name, tier);
CREATE INDEX IF NOT EXISTS lookup_title ON lookup (title, tier);
"""
# The trigrams of the lookup's words, for ``MATCH`` (when this sqlite has FTS5: else ``search`` reads
# every card). No positions (detail=none): a query asks for every trigram of its words, and the
# reader checks the words in what it gets, as it would in every card.
WORDS = "CREATE VIRTUAL TABLE IF NOT EXISTS lookup_words USING fts5(words, content='lookup', content_rowid='id', " \
        "tokenize='trigram', detail=none)"
LOOKUP = "lookup"  # the lookup's rows, staged and written as a catalog of that kind (``stage_catalog``)
LOOKUP_COLUMNS = ("path", "okf_id", "stem", "name", "title")

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_code_key: str | None = None


def code_key() -> str:
    """What the facts of this okfgit were computed by: its version, how many modules it has,
    and the sums of their sizes and of their mtimes (computed once per process). An edited,
    added or removed module changes it, a forgotten version bump included, so facts computed
    by other code are never served."""
    global _code_key
    if _code_key is None:
        count = size = mtime = 0
        stack = [_PACKAGE]
        while stack:
            with os.scandir(stack.pop()) as found:
                for entry in found:
                    if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                        stack.append(entry.path)
                    elif entry.name.endswith(".py"):
                        st = entry.stat()
                        count, size, mtime = count + 1, size + st.st_size, mtime + st.st_mtime_ns
        _code_key = f"{TOOL} {count} {size} {mtime}"
    return _code_key


class Row(NamedTuple):
    """One KB path's fact as stored: the blob OID, the fact as JSON text, or (``value`` None)
    why the blob is no such fact."""

    oid: str
    value: str | None
    problem: str | None = None


class Catalog(NamedTuple):
    """The stored facts of one kind for one tier: the KB tree they describe, the commit it was
    read at, (path, fact as JSON) of each path with a fact, and (path, blob OID, why) of each
    path without one."""

    tree: str
    commit: str | None
    facts: list[tuple[str, str]]
    problems: list[tuple[str, str, str]]


class _Staged:
    """A catalog to write: where it now stands, and every row it has (``base`` None), or the
    rows that changed since the stored tree ``base`` (None: the path is gone); ``saved`` is
    told once they are written."""

    __slots__ = ("tree", "commit", "rows", "base", "saved")

    def __init__(self, tree: str, commit: str | None, rows: Callable[[], Iterable[tuple[str, tuple[Any, ...] | None]]],
                 base: str | None, saved: Callable[[], None]) -> None:
        self.tree = tree
        self.commit = commit
        self.rows = rows
        self.base = base
        self.saved = saved


class Store:
    """One repository's ``state.db``: opened on first use (never created by a read), the rows
    a run asked for, and what it staged to write (``save``)."""

    def __init__(self, common_dir: paths.StrPath) -> None:
        self.common_dir = Path(common_dir)
        self.path = paths.state(common_dir)
        self.memo: dict[Any, Any] = {}  # what readers made of the rows this run (knowledge/catalog.py)
        self._conn: sqlite3.Connection | None = None
        self._catalogs: dict[tuple[str, str], _Staged] = {}
        self._records: dict[str, Any] = {}  # name -> value (None: remove)
        self._broken = False

    # -- the connection -------------------------------------------------------------------

    def connection(self, create: bool = False) -> sqlite3.Connection | None:
        """The open database; None when there is none (``create``: make it) or it cannot be opened."""
        if self._conn is not None:
            return self._conn
        if self._broken or (not create and not os.path.lexists(self.path)):
            return None
        import sqlite3

        try:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=BUSY_S, isolation_level=None)
        except (sqlite3.Error, OSError):
            self._broken = True
            return None
        try:
            conn.execute("PRAGMA synchronous = FULL")  # the ownership record shares the file
        except sqlite3.DatabaseError:
            pass  # not a database: each read says so, and the record's save replaces it
        self._conn = conn
        return conn

    def reopen(self) -> None:
        """Forget the open connection (the file was replaced by a new database)."""
        self.close()
        self._broken = False

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def mtime_ns(self) -> int | None:
        """The database file's mtime (the file system's clock at its last write)."""
        try:
            return os.stat(self.path).st_mtime_ns
        except OSError:
            return None

    # -- facts ----------------------------------------------------------------------------

    def catalog(self, kind: str, tier: str, view: str = "value") -> Catalog | None:
        """The stored ``kind`` facts of ``tier``; None when there are none, they were computed
        by other code (``code_key``), or the store cannot be read. ``view``: an SQL expression
        of each row's ``value`` giving the JSON the caller reads (default the whole fact), so a
        reader that needs a few fields of every fact parses no more than those."""
        head = self.head(kind, tier)
        facts = self._rows(f"SELECT path, {view} FROM facts WHERE kind = ? AND tier = ? AND value IS NOT NULL",
                           (kind, tier)) if head is not None else None
        problems = self.problems(kind, tier) if facts is not None else None
        if head is None or facts is None or problems is None:
            return None
        return Catalog(head[0], head[1], facts, problems)

    def head(self, kind: str, tier: str) -> tuple[str, str | None] | None:
        """(the KB tree, the commit it was read at) the stored ``kind`` facts of ``tier`` describe;
        None as for ``catalog``."""
        found = self._rows("SELECT tree, commit_oid FROM catalogs WHERE kind = ? AND tier = ? AND code = ?",
                           (kind, tier, code_key()))
        return found[0] if found else None

    def problems(self, kind: str, tier: str) -> list[tuple[str, str, str]] | None:
        """(path, blob OID, why) of each path of ``tier`` that has no ``kind`` fact, by path."""
        return self._rows("SELECT path, oid, problem FROM facts WHERE kind = ? AND tier = ? AND value IS NULL "
                          "ORDER BY path", (kind, tier))

    def rows(self, kind: str, tier: str, tree: str | None, paths: Iterable[str] = (),
             containing: Iterable[str] = ()) -> dict[str, Row] | None:
        """The stored ``kind`` facts of ``tier`` at ``paths`` (one lookup each: the rows are keyed
        by path) and of every path whose fact's JSON holds one of the strings ``containing``, by
        path, when they describe the KB tree ``tree`` (None: any); None when they describe
        another (or other code computed them, or the store cannot be read)."""
        head = self.head(kind, tier)
        if head is None or tree not in (None, head[0]):
            return None
        paths, containing = list(paths), list(containing)
        select = "SELECT path, oid, value, problem FROM facts WHERE kind = ? AND tier = ? AND "
        found: list[tuple[str, str, str | None, str | None]] = []
        for at in range(0, len(paths), 500):  # SQLite's limit of variables in one statement
            chunk = paths[at:at + 500]
            rows = self._rows(select + f"path IN ({', '.join('?' * len(chunk))})", (kind, tier, *chunk))
            if rows is None:
                return None
            found += rows
        if containing:
            rows = self._rows(select + "(" + " OR ".join(["instr(value, ?) > 0"] * len(containing)) + ")",
                              (kind, tier, *containing))
            if rows is None:
                return None
            found += rows
        return {path: Row(oid, value, problem) for path, oid, value, problem in found}

    # -- the lookup -----------------------------------------------------------------------
    # Each asks the rows of one tree: the caller checks first that the ``kind`` facts and the
    # lookup describe the tree it reads (``head``). Each answers (path, fact as JSON) by path,
    # or None when the store cannot answer (the caller then reads every fact).

    def facts_under(self, kind: str, tier: str, prefix: str) -> list[tuple[str, str]] | None:
        """The ``kind`` facts of the paths that start with ``prefix``."""
        after = _after(prefix)
        if not prefix or after is None:
            return self._rows("SELECT path, value FROM facts WHERE kind = ? AND tier = ? AND value IS NOT NULL "
                              "ORDER BY path", (kind, tier)) if not prefix else None
        return self._rows("SELECT path, value FROM facts WHERE kind = ? AND tier = ? AND path >= ? AND path < ? "
                          "AND value IS NOT NULL ORDER BY path", (kind, tier, prefix, after))

    def looked_up(self, kind: str, tier: str, column: str, value: str, prefix: bool = False,
                  ) -> list[tuple[str, str]] | None:
        """The ``kind`` facts whose lookup ``column`` (one of ``LOOKUP_COLUMNS``) is ``value``
        (``prefix``: starts with it)."""
        if column not in LOOKUP_COLUMNS or (prefix and _after(value) is None):
            return None
        where, args = (f"l.{column} >= ? AND l.{column} < ?", (value, _after(value))) if prefix else \
            (f"l.{column} = ?", (value,))
        indexed = f"INDEXED BY lookup_{column}" if column != "path" else ""  # else sqlite may walk every row
        return self._rows(f"SELECT l.path, f.value FROM lookup l {indexed} JOIN facts f ON f.kind = ? AND "
                          f"f.tier = l.tier AND f.path = l.path WHERE {where} AND l.tier = ? ORDER BY l.path",
                          (kind, *args, tier))

    def matching(self, tier: str, query: str) -> list[tuple[str, str | None, str, str, str, str]] | None:
        """(path, okf_id, words, status, type, tags) of each lookup row whose words match the
        FTS5 ``query``, by path: what ``search`` checks, filters and ranks a concept by. No
        fact is read (the cards of the few it shows are read after, by path)."""
        # CROSS JOIN: the index first, then the rows it names (else sqlite may ask it once per row).
        return self._rows("SELECT l.path, l.okf_id, l.words, l.status, l.type, l.tags FROM lookup_words w CROSS JOIN "
                          "lookup l ON l.id = w.rowid WHERE lookup_words MATCH ? AND l.tier = ? ORDER BY l.path",
                          (query, tier))

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Any] | None:
        import sqlite3

        conn = self.connection()
        if conn is None:
            return None
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.Error:
            return None

    def stage_catalog(self, kind: str, tier: str, tree: str, commit: str | None,
                      rows: Callable[[], Iterable[tuple[str, tuple[Any, ...] | None]]], base: str | None,
                      saved: Callable[[], None] = lambda: None) -> None:
        """Stage the ``kind`` facts of ``tier`` at ``tree``: ``rows`` are every row it has
        (``base`` None), or the paths that changed since the stored tree ``base`` (None: the
        path is gone); a ``Row`` each, or for ``LOOKUP`` a value of each of ``LOOKUP_COLUMNS``
        but ``path``, then the words, status, type and tags (a JSON list). When the store holds
        another tree by the time it is written (another okfgit stored one meanwhile), changes
        from ``base`` are not written: what is there stays.
        ``rows()`` gives them when they are written (each made then: no catalog is held twice)."""
        self._catalogs[(kind, tier)] = _Staged(tree, commit, rows, base, saved)

    # -- records --------------------------------------------------------------------------

    def record(self, name: str) -> Any:
        """The record ``name`` (as staged in this run, else as stored); None when there is none."""
        if name in self._records:
            return self._records[name]
        import sqlite3

        conn = self.connection()
        if conn is None:
            return None
        try:
            found = conn.execute("SELECT value FROM records WHERE name = ?", (name,)).fetchone()
            return json.loads(found[0]) if found is not None else None
        except (sqlite3.Error, ValueError):
            return None

    def stage_record(self, name: str, value: Any) -> None:
        """Stage the record ``name`` (JSON-serialisable; None removes it); nothing to write when
        the store holds it already."""
        if name not in self._records and self.record(name) == value:
            return
        self._records[name] = value

    # -- writing --------------------------------------------------------------------------

    @property
    def staged(self) -> bool:
        return bool(self._catalogs or self._records)

    def save(self, write: Callable[[sqlite3.Connection], None] | None = None) -> bool:
        """Write what was staged, and what ``write`` writes (the ownership record), in one
        transaction. True when it wrote. Without ``write`` it never fails: facts and records
        are only a cache (a store that cannot be written stays as it was); with it, an
        IntegrityError says the record could not be written and nothing was."""
        if write is None and not self.staged:
            return False
        import sqlite3

        conn = self.connection(create=True)
        if conn is None:
            if write is not None:
                raise IntegrityError(f"cannot write {self.path}")
            return False
        from okfgit.local import journal

        journal.sweep_okf_dir(self.common_dir)  # a temp file a killed okfgit left beside it
        try:
            conn.execute("BEGIN IMMEDIATE")
            _create(conn, self.common_dir)
            if write is not None:
                write(conn)
            self._write_staged(conn)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if write is not None:
                raise IntegrityError(f"cannot write {self.path}: {exc}") from exc
            return False
        for staged in self._catalogs.values():
            staged.saved()
        self._catalogs.clear()
        self._records.clear()
        return True

    def _write_staged(self, conn: sqlite3.Connection) -> None:
        code = code_key()
        for (kind, tier), staged in sorted(self._catalogs.items()):
            if staged.base is not None and conn.execute(
                    "SELECT 1 FROM catalogs WHERE kind = ? AND tier = ? AND tree = ? AND code = ?",
                    (kind, tier, staged.base, code)).fetchone() is None:
                continue
            if kind == LOOKUP:
                if not _write_lookup(conn, tier, staged):
                    continue
            else:
                if staged.base is None:
                    conn.execute("DELETE FROM facts WHERE kind = ? AND tier = ?", (kind, tier))
                gone: list[tuple[str, str, str]] = []

                def present(kind: str = kind, tier: str = tier, staged: _Staged = staged) -> Iterator[tuple[Any, ...]]:
                    for path, row in staged.rows():  # one at a time, each made as it is written
                        if row is None:
                            gone.append((kind, tier, path))
                        else:
                            yield (kind, tier, path, *row)

                conn.executemany("INSERT OR REPLACE INTO facts (kind, tier, path, oid, value, problem) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", present())
                conn.executemany("DELETE FROM facts WHERE kind = ? AND tier = ? AND path = ?", gone)
            conn.execute("INSERT OR REPLACE INTO catalogs (kind, tier, tree, commit_oid, code) VALUES (?, ?, ?, ?, ?)",
                         (kind, tier, staged.tree, staged.commit, code))
        conn.executemany("DELETE FROM records WHERE name = ?",
                         [(name,) for name, value in self._records.items() if value is None])
        conn.executemany("INSERT OR REPLACE INTO records (name, value) VALUES (?, ?)",
                         [(name, json.dumps(value, sort_keys=True, separators=(",", ":")))
                          for name, value in self._records.items() if value is not None])


def _after(prefix: str) -> str | None:
    """The least string after every string that starts with ``prefix`` (None: none is)."""
    if not prefix or ord(prefix[-1]) >= 0x10FFFF:
        return None
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def _write_lookup(conn: sqlite3.Connection, tier: str, staged: _Staged) -> bool:
    """The lookup's rows of ``tier`` and their words (every row, or the changed paths'); when
    they cannot be written (a sqlite without the FTS5 a table needs), nothing of them is, and
    the lookup is dropped: no reader trusts it until it is written whole again."""
    import sqlite3

    changed: list[tuple[str, ...]] = []  # the rows, read once: the paths they name and the rows to insert
    inserted: list[tuple[Any, ...]] = []
    for path, row in staged.rows():
        changed.append((tier, path))
        if row is not None:
            inserted.append((tier, path, *row))
    keys: list[tuple[str, ...]]
    added: list[tuple[str, ...]]
    if staged.base is None:
        where, keys, added = "tier = ?", [(tier,)], []
    else:
        where, keys, added = "tier = ? AND path = ?", changed, [(tier, row[1]) for row in inserted]
    conn.execute("SAVEPOINT lookup")
    try:
        words = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'lookup_words'").fetchone() is not None
        if words and staged.base is not None:
            conn.executemany("INSERT INTO lookup_words (lookup_words, rowid, words) SELECT 'delete', id, words "
                             f"FROM lookup WHERE {where}", keys)
        conn.executemany(f"DELETE FROM lookup WHERE {where}", keys)
        conn.executemany("INSERT INTO lookup (tier, path, okf_id, stem, name, title, words, status, type, tags) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", inserted)
        if words and staged.base is None:
            # Every row: the index made again from the rows, in one piece. Deleting each old row's
            # words instead keeps them as tombstones that every query walks until a merge (twice
            # the work at 100,000 concepts), and the pieces a rebuild writes cost a query a
            # fifth more than one.
            conn.execute("INSERT INTO lookup_words (lookup_words) VALUES ('rebuild')")
            conn.execute("INSERT INTO lookup_words (lookup_words) VALUES ('optimize')")
        elif words:
            conn.executemany(f"INSERT INTO lookup_words (rowid, words) SELECT id, words FROM lookup WHERE {where}",
                             added)
        conn.execute("RELEASE lookup")
        return True
    except sqlite3.Error:
        conn.execute("ROLLBACK TO lookup")
        conn.execute("RELEASE lookup")
        conn.execute("DELETE FROM catalogs WHERE kind = ? AND tier = ?", (LOOKUP, tier))
        return False


def _create(conn: sqlite3.Connection, common_dir: Path) -> None:
    """The tables of facts and records, made the first time a store is written (and the cache
    files an earlier okfgit kept beside it removed: nothing reads them any more)."""
    import sqlite3

    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'lookup'").fetchone() is not None:
        if conn.execute("SELECT 1 FROM pragma_table_info('lookup') WHERE name = 'tags'").fetchone() is not None:
            return
        # An earlier okfgit's lookup, without what ``search`` ranks by: made again (no reader
        # trusts its rows: other code wrote them), whole, by the next reader.
        conn.execute("DROP TABLE IF EXISTS lookup_words")
        conn.execute("DROP TABLE lookup")
        conn.execute("DELETE FROM catalogs WHERE kind = ?", (LOOKUP,))
    for statement in SCHEMA.strip().split(";"):
        if statement.strip():
            conn.execute(statement)
    try:
        conn.execute(WORDS)
    except sqlite3.OperationalError:
        pass  # no FTS5 in this sqlite: ``search`` reads every card
    for name in paths.LEGACY_CACHES:
        try:
            os.unlink(paths.okf_dir(common_dir) / name)
        except OSError:
            pass


class Stores:
    """The stores of the repositories one run reads, by common git dir, each opened on first
    use; ``save`` writes each one's staged rows once, at the end of the run."""

    def __init__(self, first: Iterable[Store] = ()) -> None:
        self._by_dir: dict[str, Store] = {os.path.abspath(s.common_dir): s for s in first}

    def of(self, common_dir: paths.StrPath) -> Store:
        key = os.path.abspath(common_dir)
        found = self._by_dir.get(key)
        if found is None:
            found = self._by_dir[key] = Store(common_dir)
        return found

    def save(self) -> None:
        """Write every store's staged facts and records (each a cache: never fails)."""
        for store in self._by_dir.values():
            store.save()
