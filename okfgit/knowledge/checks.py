"""The checks of a tier against OKF v0.2 conformance and against okfgit's profile.

Findings come in two groups, reported apart, so a plain OKF bundle is never called
"invalid OKF" for lacking okfgit's keys:

- ``okf``: OKF v0.2 §11 (frontmatter with a non-empty ``type`` on every non-reserved
  ``.md``; ``index.md`` and ``log.md`` structure) plus input okfgit cannot read at all
  (invalid YAML, refused YAML tags, not UTF-8, binary, symlinks).
- ``profile``: what okfgit's operations rely on (profile keys, ``okf_id`` identity,
  indexes that list every concept, links that resolve, no leftover needs-merge
  siblings, sizes that Claude's recall shows whole).

Every code and its severity is listed in spec/okf-format.md. Reads come from the tree at
a revision or from the working tree (the snapshot given). Used by ``doctor``, ``index``,
capture and review. Each blob is read, decoded and
parsed exactly once; the index and link checks work from those parsed files.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import re
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, TypeVar

from okfgit.format import index_md as index
from okfgit.format import lifecycle, needs_merge
from okfgit.format import markdown as links
from okfgit.format import resources
from okfgit.format import concept as okf
from okfgit.format.findings import ERROR, WARNING, Finding
from okfgit.format.similar import Keys
from okfgit.errors import OkfError, ValidationError
from okfgit.git.objects import FILE_MODE, NOT_UTF8, Entry, blob_oid
from okfgit.git.repository import Repo
from okfgit.knowledge import catalog, similar
from okfgit.knowledge.snapshot import Snapshot, TreeEntries, snapshot
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.local.store import Row, Store, Stores, code_key
from okfgit.progress import Progress, silent

OKF = "okf"
PROFILE = "profile"
RECALL_BYTES = 4096  # Claude Code's recall shows only the first 4 KB of a memory file
PROFILE_KEYS = ("title", "description", "okf_id", "scope", "okf_source")
_CHECKED_KEYS = PROFILE_KEYS + ("name",)  # name: optional, but a string when present
NEEDS_MERGE_STATUS = "needs-merge"

_LOG_GROUP = re.compile(r"^##[ \t]+(.*?)[ \t#]*$")
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+\S")
_SETEXT = re.compile(r"^\s{0,3}=+\s*$")
# "one sentence": a sentence end followed by another sentence; common abbreviations and
# initials ("e.g. X", "J. Smith") are not sentence ends.
_MAYBE_TWO = re.compile(r"[.!?]\s")  # cheap test first: the full one below costs 5 µs a description
_SENTENCE_END = re.compile(r"(?<![A-Z])(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\bcf)[.!?]\s+[A-Z0-9\"'(\[`]")


@dataclass(slots=True)
class TierReport:
    """Findings for one tier, at one commit (or its working tree)."""

    tier: Tier
    commit: str | None
    worktree: bool
    concepts: int
    findings: list[Finding] = field(default_factory=list)

    def group(self, name: str) -> list[Finding]:
        return sorted((f for f in self.findings if f.group == name), key=Finding.sort_key)

    @property
    def conformant(self) -> bool:
        """OKF v0.2 conformant: no error in the OKF group."""
        return not any(f.severity == ERROR for f in self.findings if f.group == OKF)

    def count(self, severity: str) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    def to_json(self) -> dict[str, Any]:
        return {
            "tier": self.tier.label,
            "commit": self.commit,
            "worktree": self.worktree,
            "root": str(self.tier.root),
            "concepts": self.concepts,
            "okf": {"conformant": self.conformant, "findings": [f.to_json() for f in self.group(OKF)]},
            "profile": {"findings": [f.to_json() for f in self.group(PROFILE)]},
        }


# -- reading each file once ------------------------------------------------------------


@dataclass(slots=True)
class Doc:
    """A readable markdown file: its text split once into frontmatter and body."""

    path: str
    data: bytes
    meta: dict[str, Any]
    has_frontmatter: bool
    body: bytes
    body_line: int  # file line where the body starts
    _entries: list[index.Line] | None = None

    @property
    def text(self) -> str:
        return _text(self.body)

    def entries(self) -> list[index.Line]:
        """An index file's entry lines (computed once: two checks read them)."""
        if self._entries is None:
            self._entries = index.entry_lines(self.text)
        return self._entries

    def key_line(self, key: str) -> int | None:
        """The file line of a top-level frontmatter key, for pointing at it."""
        return okf.key_lines(self.data, (key,)).get(key)


class Checked(NamedTuple):
    """What doctor keeps of one concept file: a pure function of its path, its blob and the
    tier's name, so it is kept in the tier's store with ``catalog`` (one row per path, updated
    from a tree diff) and a warm doctor parses only the files that changed. Findings that
    involve other files (links, duplicate ``okf_id``, indexes) or the clock (``stale``) are
    recomputed each run from these fields, so the store can only save work, never hide a finding."""

    oid: str
    findings: list[Any]  # [group, code, severity, message, line]: the checks of the file on its own
    readable: bool  # read as text (no reading finding): its links and keys take part
    has_frontmatter: bool
    body_line: int  # file line where the body starts
    links: list[Any]  # [kind, target, line in the body, where it leads (see _where)] for each link of the body
    okf_id: str | None  # the okf_id when it is a string (its line is found when a duplicate needs it)
    merge_status: bool  # status: needs-merge
    superseded_by: list[str]
    superseded_line: int | None
    name: str | None  # the frontmatter name when it is a string
    item: list[str]  # [title, description, type] as the folder's index entry shows them
    stale_after: str  # the instant it goes stale, ISO 8601 ("" when none or unreadable)
    stale_line: int | None
    resources: list[Any]  # [where, path as written, line] of each path-valued field (format/resources.py)
    similar: str | None  # its near-duplicate keys (knowledge/similar.py), packed; None: not compared


def checked_of(tier_name: str, path: str, entry: Entry, data: bytes, parsed: okf.Parsed | None = None) -> Checked:
    """Read and check one concept file on its own (see ``Checked``); ``parsed`` is
    ``okf.split(data, path)`` when the caller has it already."""
    if entry.is_link:  # reported as a symlink by the scan; never read
        return Checked(entry.oid, [], False, False, 1, [], None, False, [], None, None,
                       [index.escape_title(okf.title_from_path(path)), "", ""], "", None, [], None)
    findings: list[Finding] = []
    doc = _read(path, data, findings, parsed)
    if doc is None:
        return Checked(entry.oid, [_finding_row(f) for f in findings], False, False, 1, [], None, False, [],
                       None, None, _item_row(index.item_of(data, path)), "", None, [], None)
    checks = FileChecks(tier_name)
    checks.concept(doc)
    meta = doc.meta
    okf_id = meta.get("okf_id")
    name = meta.get("name")
    life = checks.life  # read by the checks (None without frontmatter)
    refs = list(life.superseded_by) if life is not None else []
    stale = life.stale_label() if life is not None and not life.stale_after_invalid else None
    title = okf.one_line(meta.get("title")) or okf.title_from_path(path)
    leads = links.leads_to
    keys = similar.keys_of(path, meta, doc.body) if doc.has_frontmatter else None
    # Positional, in the fields' order (keywords cost a microsecond a concept).
    return Checked(
        entry.oid,
        [_finding_row(f) for f in checks.findings],
        True,  # readable
        doc.has_frontmatter,
        doc.body_line,
        [[kind, target, line, None if kind == "wiki" else _shared(leads(path, target))]  # as _where says
         for kind, target, line in links.extract(doc.body)],
        okf_id if isinstance(okf_id, str) else None,
        meta.get("status") == NEEDS_MERGE_STATUS,  # merge_status
        refs,  # superseded_by
        doc.key_line("superseded_by") if refs else None,
        name if isinstance(name, str) else None,
        [index.escape_title(title), okf.one_line(meta.get("description")),
         sys.intern(okf.one_line(meta.get("type")))],  # a few types shared by many concepts
        stale or "",  # stale_after
        doc.key_line("stale_after") if stale else None,
        [[f.where, f.value, resources.line_of(doc.data, f, doc.key_line(f.key))]
         for f in resources.path_fields(meta)] if meta else [],
        None if keys is None else keys.packed(),
    )


class Page(NamedTuple):
    """What doctor keeps of one reserved file (``index.md``, ``log.md``): a pure function of
    its path and blob, cached by blob OID beside the concepts' ``Checked`` facts. Whether an
    entry's target exists, what the target's frontmatter says and which indexes reach which
    are worked out each run from these fields, so here too the cache only saves work."""

    oid: str
    findings: list[Any]  # [group, code, severity, message, line]: reading it, its structure, its log dates
    readable: bool  # read as text (no reading finding): it takes part in the index checks
    body_line: int  # file line where the body starts
    # index.md, each entry that starts with a link: [line in the file, target, where it leads
    # (see _where), conforming, title, description, the line as written when not conforming]
    entries: list[Any]
    links: list[Any]  # index.md, the links outside its entries: [kind, target, line in the body]


def page_of(path: str, entry: Entry, data: bytes) -> Page:
    """Read and check one reserved file on its own (see ``Page``)."""
    findings: list[Finding] = []
    doc = None if entry.is_link else _read(path, data, findings)  # a symlink: reported by the scan
    if doc is None:
        return Page(entry.oid, [_finding_row(f) for f in findings], False, 1, [], [])
    checks = FileChecks("")
    rows: list[Any] = []
    intro: list[Any] = []
    if path.rsplit("/", 1)[-1] == "log.md":
        checks.log(doc)
    else:
        checks.index_structure(doc)
        lines = doc.entries()
        for line in lines:
            if line.target is None:
                continue
            where = _shared(links.leads_to(path, line.target))  # _where of an "md" link
            rows.append([doc.body_line + line.number - 1, line.target, where, line.conforming, line.title,
                         line.description, "" if line.conforming else line.text.strip()])
        # Links in the intro (and outro) resolve like any link. Entry lines are blanked (not
        # dropped) so line numbers stay true.
        entry_numbers = {line.number for line in lines}
        rest = "\n".join("" if n in entry_numbers else text_line
                         for n, text_line in enumerate(doc.text.splitlines(), start=1))
        intro = [[link.kind, link.target, link.line] for link in links.extract(rest)]
    return Page(entry.oid, [_finding_row(f) for f in checks.findings], True, doc.body_line, rows, intro)


def _shared(where: str | None) -> str | None:
    """Where a link leads, as the one string of that path (``sys.intern``): every concept's
    facts are held at once, and each path is led to by several links and named by the tree."""
    return sys.intern(where) if where else where


def _where(source: str, link: links.Link) -> str | None:
    """Where a markdown link of ``source`` leads in the tier ("/" when it leaves the KB, None
    when external or a ``[[name]]`` link): a function of the path alone, so it is cached too."""
    return None if link.kind == "wiki" else links.leads_to(source, link.target)


def _item_row(item: index.Item) -> list[str]:
    return [item.title, item.description, item.type]


def _finding_row(f: Finding) -> list[Any]:
    return [f.group, f.code, f.severity, f.message, f.line]


def fact_from_json(value: list[Any]) -> Checked | Page:
    """A stored fact (its JSON list) as a ``Checked`` or a ``Page``."""
    return Page(*value) if len(value) == len(Page._fields) else Checked(*value)


class Facts(dict[str, Checked]):
    """Every concept of a snapshot checked on its own (path -> ``Checked``), with ``pages``:
    its reserved files (path -> ``Page``), read from the same cache, and ``tree``: the KB tree
    they were read from (None: a working tree)."""

    def __init__(self, concepts: dict[str, Checked], pages: dict[str, Page], tree: str | None = None) -> None:
        super().__init__(concepts)
        self.pages = pages
        self.tree = tree


def doctor_kind(tier: Tier) -> catalog.Kind[Checked | Page]:
    """The doctor cache of ``tier``: a ``Checked`` for every concept, a ``Page`` for every
    ``index.md`` and ``log.md`` (the facts depend on the tier's name: ``scope-mismatch``)."""
    return catalog.Kind("doctor", functools.partial(_fact_by_label, tier.name), fact_from_json, _is_markdown)


def _is_markdown(path: str) -> bool:
    return path.endswith(".md")


def _fact_by_label(tier_name: str, _label: str, path: str, entry: Entry, data: bytes) -> Checked | Page:
    return fact_of(tier_name, path, entry, data)


def fact_of(tier_name: str, path: str, entry: Entry, data: bytes) -> Checked | Page:
    """One markdown file checked on its own: a concept's ``Checked``, a reserved file's ``Page``."""
    return checked_of(tier_name, path, entry, data) if okf.is_concept_path(path) else page_of(path, entry, data)


def checked_facts(snap: Snapshot, progress: Progress = silent, stores: Stores | None = None) -> Facts:
    """Every concept path of ``snap`` checked on its own (and its reserved files, in ``pages``):
    from the tier's store when the snapshot is a commit of the tier's repository (``stores``:
    the run's, saved by the run; else saved here), read afresh otherwise (a working tree)."""
    tier = snap.tier
    if snap.commit is not None and tier.exists():
        try:
            return _cached_facts(snap, progress, stores)
        except (OkfError, OSError):
            pass  # only a cache: check every file instead
    return _split_facts({path: fact_of(tier.name, path, entry, b"" if entry.is_link else snap.blob(path))
                         for path, entry in snap.entries.items() if path.endswith(".md")})


def _split_facts(facts: Mapping[str, Checked | Page], tree: str | None = None,
                 again: Mapping[str, Checked | Page] | None = None) -> Facts:
    """``facts`` (and ``again``: those read again) as a ``Facts``, made in place: no other copy is held."""
    out = Facts({}, {}, tree)
    pages = out.pages
    for path, fact in itertools.chain(facts.items(), again.items() if again else ()):
        if type(fact) is Checked:
            out[path] = fact
        else:
            assert isinstance(fact, Page)
            pages[path] = fact
    return out


F = TypeVar("F", bound=catalog.Fact)


def cached_catalog(kind: catalog.Kind[F], snap: Snapshot, progress: Progress = silent,
                   stores: Stores | None = None) -> catalog.TierCatalog[F] | None:
    """The ``kind`` catalog of ``snap`` (a commit of its tier's repository), read from the
    tier's store and brought up to date by a tree diff, staged in ``stores`` for the run to
    save (without it, saved here); None when the commit has no KB tree. Raises OkfError or
    OSError when the repository cannot be read."""
    tier = snap.tier
    repo = tier.open()
    assert snap.commit is not None
    if type(snap.entries) is dict:  # the whole listing, as snapshot() read it (review's lazy tree is not)
        repo = _Listed(repo, snap.commit, tier.prefix, snap.entries)
    tree = repo.tree_oid(snap.commit, tier.prefix)
    if tree is None:
        return None
    store = stores.of(repo.common_dir) if stores is not None else Store(repo.common_dir)
    built = catalog.build_kind(kind, repo, tier, snap.commit, tree, catalog.load(kind, store, tier.label),
                               progress=progress)
    catalog.remember(kind, store, tier.label, built)
    if stores is None:
        store.save()  # only a cache: never fails
    return built


class _Listed(Repo):
    """``repo`` that answers the listing of ``prefix`` at ``commit`` with the snapshot's own
    ``entries`` (a full catalog read lists the tree again otherwise: 50 ms at 10,000 concepts)."""

    def __init__(self, repo: Repo, commit: str, prefix: str, entries: dict[str, Entry]) -> None:
        self.__dict__.update(repo.__dict__)  # the same repository in every other respect
        self._listed = (commit, prefix, entries)

    def tree_entries(self, commit: str | None, prefix: str = "") -> dict[str, Entry]:
        listed_commit, listed_prefix, entries = self._listed
        if commit == listed_commit and prefix == listed_prefix:
            return entries
        return super().tree_entries(commit, prefix)

    def blobs(self, commit: str | None, prefix: str = "") -> Iterator[tuple[str, Entry]]:
        listed_commit, listed_prefix, entries = self._listed
        if commit == listed_commit and prefix == listed_prefix:
            return iter(sorted(entries.items()))
        return super().blobs(commit, prefix)


def _cached_facts(snap: Snapshot, progress: Progress = silent, stores: Stores | None = None) -> Facts:
    tier = snap.tier
    built = cached_catalog(doctor_kind(tier), snap, progress, stores)
    if built is None:
        return Facts({}, {})
    again = {}
    for path in built.problems:  # a blob that could not be read: check it here, where it errors
        entry = snap.entries.get(path)
        if entry is not None:
            again[path] = fact_of(tier.name, path, entry, b"" if entry.is_link else snap.blob(path))
    return _split_facts(built.facts, built.tree, again)


Pairs = list[tuple[float, str, str]]  # near-duplicate pairs: (score, path, path), most alike first


def near_pairs(snap: Snapshot, packed: Mapping[str, str | None], tree: str | None = None,
               store: Store | None = None) -> Callable[[set[str] | None], Pairs]:
    """The near-duplicate pairs of ``snap``, whose concepts' keys are ``packed`` (each concept's
    ``Checked.similar``), as ``Checker`` asks for them: those with a concept of ``only`` in
    them, or every pair (``None``), then kept in ``store`` between runs (``similar.kept_pairs``)
    when they are of the KB tree ``tree``."""
    label = snap.tier.label

    def keys() -> similar.Packed:
        return similar.Packed(label, packed)

    def blob(key: similar.Key) -> bytes:
        return snap.blob(key[1])

    def pairs(only: set[str] | None) -> Pairs:
        if only is not None:
            known = keys()
            among = [(label, p) for p in sorted(only) if (label, p) in known]
            wanted = {k for key in among for k in known[key].ident + known[key].less}
            found = similar.Index(known, blob, wanted).pairs(among)
        else:
            found = _kept(keys, blob, tree, snap.tier, store).pairs
        return [(score, a[1], b[1]) for score, a, b in found]

    return pairs


def _kept(keys: Callable[[], Mapping[similar.Key, Keys]], blob: Callable[[similar.Key], bytes], tree: str | None,
          tier: Tier, store: Store | None) -> similar.Kept:
    """Every near-duplicate pair of ``tier`` at ``tree``, from those ``store`` kept at an earlier tree."""
    if tree is None or store is None:
        return similar.kept_pairs(keys, blob, tree or "")
    label = tier.label
    name = f"near-duplicates {label}"
    before: similar.Kept | None = None
    changed: list[similar.Key] | None = None
    found = store.record(name)
    try:
        if found["code"] == code_key():
            before = similar.Kept(found["tree"], [(s, (label, a), (label, b)) for s, a, b in found["pairs"]],
                                  set(found["crowded"]))
            if before.tree != tree:
                changed = [(label, c.path) for c in tier.open().diff_paths(before.tree, tree)]
    except Exception:  # noqa: BLE001 - only a cache (absent, damaged, or its tree gc'd away): pair every concept
        before = None
    kept = similar.kept_pairs(keys, blob, tree, before, changed)
    if kept is not before:
        store.stage_record(name, {"code": code_key(), "tree": tree, "crowded": sorted(kept.crowded),
                                  "pairs": [[s, a[1], b[1]] for s, a, b in kept.pairs]})
    return kept


class Scan:
    """A tier's files read once: concepts as ``Checked`` facts and the reserved files
    (``index.md``, ``log.md``) as ``Page``s (both cached by blob OID), plus the symlinks."""

    def __init__(self, snap: Snapshot, facts: dict[str, Checked] | None = None,
                 paths: Collection[str] | None = None) -> None:
        """``paths``: a scoped scan reads only these (each looked up in the tree, which is
        never walked: review's cost follows the change); None reads every file."""
        self.snap = snap
        self.findings: list[Finding] = []
        self.pages: dict[str, Page] = {}
        if facts is None:
            facts = checked_facts(snap)
        self.facts = facts
        # The pages the caller's facts came with; a caller's own dict of concepts has none,
        # so they are read from the cache (or the blobs) here.
        self._known = facts.pages if isinstance(facts, Facts) else None
        self._names: dict[str, str] | None = None
        self.complete = paths is None  # every reserved file read (not only the ``paths`` asked for)
        entries = snap.entries
        for path in sorted(entries) if paths is None else sorted(p for p in paths if p in entries):
            if entries[path].is_link:
                self.findings.append(Finding("symlink", ERROR, path, "is a symlink; okfgit never follows links in a tier "
                                             "(commit the file itself instead)", group=OKF))
            elif path.endswith(NOT_UTF8):
                self.findings.append(Finding("not-utf8", ERROR, path, "its name is not UTF-8 (shown with \\x escapes, "
                                             f"{NOT_UTF8} appended), so okfgit never reads it; rename it (git mv)",
                                             group=OKF))
            elif path.endswith(".md") and okf.is_reserved(path):  # not a concept: index.md, log.md
                self._reserved(path)

    def _reserved(self, path: str) -> None:
        if self._known is None:
            self._known = checked_facts(self.snap).pages
        entry = self.snap.entries[path]
        page = self._known.get(path)
        if page is None or page.oid != entry.oid:
            page = page_of(path, entry, self.snap.blob(path))
        self.pages[path] = page

    def read_all(self) -> None:
        """Read the reserved files a scoped scan left out."""
        if self.complete:
            return
        for path, entry in sorted(self.snap.entries.items()):
            if not entry.is_link and path.endswith(".md") and not okf.is_concept_path(path) and path not in self.pages:
                self._reserved(path)
        self.complete = True

    def names(self) -> dict[str, str]:
        """What a ``[[name]]`` link may use here: frontmatter ``name`` and file stems."""
        if self._names is None:
            pairs = []
            for path in self.snap.entries:
                if okf.is_concept_path(path):
                    fact = self.facts.get(path)
                    pairs.append((path, fact.name if fact is not None and fact.readable else None))
            self._names = links.wiki_names(pairs)
        return self._names


def _read(path: str, data: bytes, findings: list[Finding], parsed: okf.Parsed | None = None) -> Doc | None:
    """``data`` split once (``parsed``, when given) into a ``Doc``; None (and a finding) when
    okfgit cannot read it."""

    def add(group: str, code: str, message: str, line: int | None = None) -> None:
        findings.append(Finding(code, ERROR, path, message, line, group))

    if len(data) > okf.MAX_CONCEPT_BYTES:
        add(PROFILE, "too-large", f"is {len(data)} bytes, over okfgit's 1 MiB limit; "
            "okfgit does not read it (its OKF conformance was not checked)")
        return None
    if b"\x00" in data:
        add(OKF, "binary", "is a binary file (contains NUL bytes), not UTF-8 markdown")
        return None
    try:
        if okf.is_reserved(path) and not path.endswith("index.md"):
            data.decode("utf-8")
            return Doc(path, data, {}, False, data, 1)  # log.md: no frontmatter to read
        if parsed is None:
            parsed = okf.split(data, path)
    except UnicodeDecodeError as exc:
        _not_utf8(data, exc, add)
        return None
    except ValidationError as exc:
        if isinstance(exc.__cause__, UnicodeDecodeError):
            _not_utf8(data, exc.__cause__, add)
        else:
            _yaml_finding(exc, add)
        return None
    head = len(data) - len(parsed.body)
    return Doc(path, data, parsed.meta, parsed.has_frontmatter, parsed.body, data.count(b"\n", 0, head) + 1)


def _not_utf8(data: bytes, exc: UnicodeDecodeError, add: Callable[..., None]) -> None:
    line = data[: exc.start].count(b"\n") + 1
    add(OKF, "not-utf8", f"is not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}", line)


def _yaml_finding(exc: ValidationError, add: Callable[..., None]) -> None:
    code, message, line = okf.yaml_problem(exc)
    add(OKF, code, message, line)


# -- the checks ------------------------------------------------------------------------


class FileChecks:
    """The checks of one file on its own: no other file and no clock involved."""

    def __init__(self, tier_name: str) -> None:
        self.tier_name = tier_name
        self.findings: list[Finding] = []
        self.life: lifecycle.Lifecycle | None = None  # a concept's lifecycle, once read

    def add(self, group: str, code: str, path: str, message: str, line: int | None = None,
            severity: str = ERROR) -> None:
        self.findings.append(Finding(code, severity, path, message, line, group))

    def concept(self, doc: Doc) -> None:
        self.frontmatter(doc)
        if doc.has_frontmatter and len(doc.data) > RECALL_BYTES:
            self.add(PROFILE, "over-4kb", doc.path, f"is {len(doc.data)} bytes; Claude's recall shows only the first "
                     "4 KB of a memory file (split it, or keep the essentials first)", severity=WARNING)

    def frontmatter(self, doc: Doc) -> None:
        """The checks of one concept file on its own (no links, no other file involved)."""
        path = doc.path
        if index.is_needs_merge(path):
            stem = index.needs_merge_master(path)
            self.add(PROFILE, "needs-merge", path, f"unresolved needs-merge sibling of {stem}: merge what "
                     f"matters into {stem}, then delete this file, or settle it in one commit: "
                     f"`okfgit proposal accept {path}` takes its words, `okfgit proposal drop {path}` drops them")
        if not doc.has_frontmatter:
            starts = doc.data.lstrip(okf.BOM).startswith(b"---")
            why = ("starts with '---' but no YAML mapping closed by '---' follows" if starts else
                   "has no YAML frontmatter (a '---' line, keys such as type, a closing '---')")
            self.add(OKF, "frontmatter-missing", path, why, 1)
            return
        meta = doc.meta
        kind = meta.get("type")
        if kind is None or (isinstance(kind, str) and not kind.strip()):
            self.add(OKF, "type-missing", path, "frontmatter has no non-empty type", doc.key_line("type") or 1)
        elif not isinstance(kind, str):
            self.add(OKF, "type-invalid", path, f"type must be a string, not {_kind(kind)}", doc.key_line("type"))
        self.profile_keys(doc)
        self.lifecycle(doc)

    def profile_keys(self, doc: Doc) -> None:
        meta, path = doc.meta, doc.path
        missing = []
        for key in _CHECKED_KEYS:
            value = meta.get(key)
            if type(value) is str and value and not value.isspace():
                continue  # the usual case, decided cheaply
            if value is None and key == "name":
                continue  # no name: the usual case too
            if _blank(value):
                if key != "name":
                    missing.append(key)
            elif key != "okf_id" and not isinstance(value, str):
                self.add(PROFILE, "profile-key-invalid", path, f"{key} must be a string, not {_kind(value)}",
                         doc.key_line(key))
        if missing:
            self.add(PROFILE, "profile-keys-missing", path, f"missing okfgit profile keys: {', '.join(missing)} "
                     "(`okfgit adopt` adds them)", 1)
        scope = meta.get("scope")
        if isinstance(scope, str) and scope.strip() and scope != self.tier_name:
            self.add(PROFILE, "scope-mismatch", path, f"scope is {scope!r} but the file is in the "
                     f"{self.tier_name} tier", doc.key_line("scope"))
        okf_id = meta.get("okf_id")
        if okf_id is not None and not _blank(okf_id) and not okf.is_valid_okf_id(okf_id):
            self.add(PROFILE, "okf-id-malformed", path, f"okf_id {okf_id!r} is not a lower-case UUID "
                     "(8-4-4-4-12 hex digits)", doc.key_line("okf_id"))
        self.tags(doc)
        description = meta.get("description")
        if isinstance(description, str) and _MAYBE_TWO.search(description) and _SENTENCE_END.search(description):
            self.add(PROFILE, "description-not-one-sentence", path, "description should be one sentence",
                     doc.key_line("description"), WARNING)

    def tags(self, doc: Doc) -> None:
        tags = doc.meta.get("tags")
        if tags is None:
            return
        if not isinstance(tags, list):
            self.add(PROFILE, "tags-invalid", doc.path, f"tags must be a list of kebab-case words, not "
                     f"{_kind(tags)}", doc.key_line("tags"))
            return
        for tag in tags:
            if not isinstance(tag, str):
                self.add(PROFILE, "tags-invalid", doc.path, "tags must be a list of words, not of lists, mappings "
                         "or numbers", doc.key_line("tags"))
                return
        # Any other string is a tag OKF allows (§4.1: short strings); okfgit writes kebab-case
        # ones, but a bundle's own ("Q&A", "user activity") are kept and never warned about.

    def lifecycle(self, doc: Doc) -> None:
        """OKF's lifecycle and trust families, read by ``format.lifecycle`` (§5.2-§5.5)."""
        status = doc.meta.get("status")
        life = self.life = lifecycle.lifecycle(doc.meta)
        if status == NEEDS_MERGE_STATUS:
            self.add(PROFILE, "needs-merge", doc.path, "status: needs-merge; resolve the conflict, then set "
                     "status to draft, stable or deprecated", doc.key_line("status"))
        elif life.status not in lifecycle.STATUSES:
            self.add(PROFILE, "status-invalid", doc.path, f"status {status!r} is not one of "
                     f"{', '.join(lifecycle.STATUSES)}", doc.key_line("status"), WARNING)
        if life.stale_after_invalid:
            self.add(PROFILE, "stale-after-invalid", doc.path, f"stale_after {doc.meta.get('stale_after')!r} is "
                     "not an ISO 8601 instant (such as 2026-09-23T00:00:00Z); okfgit cannot tell when it goes "
                     "stale", doc.key_line("stale_after"), WARNING)
        problem = lifecycle.trust(doc.meta).problem
        if problem is not None:
            self.add(PROFILE, "verified-invalid", doc.path, f"{problem}; review treats the concept as "
                     "human-reviewed until it is fixed", doc.key_line("verified"))

    # reserved files: each on its own too ---------------------------------------------

    def index_structure(self, doc: Doc) -> None:
        path = doc.path
        if doc.has_frontmatter:
            extra = sorted(k for k in doc.meta if k != "okf_version")
            if path != "index.md":
                self.add(OKF, "index-frontmatter", path, "index.md has frontmatter; only the root index.md may, "
                         "and only okf_version", 1)
            elif extra:
                self.add(OKF, "index-frontmatter", path, f"the root index.md may carry only okf_version in its "
                         f"frontmatter, not {', '.join(extra)}", 1)
            version = doc.meta.get("okf_version")
            if path == "index.md" and version is not None and str(version) != "0.2":
                self.add(OKF, "okf-version", path, f"declares okf_version {version!r}; okfgit checks OKF 0.2",
                         doc.key_line("okf_version"), WARNING)
        if not _has_heading(doc.text):
            self.add(OKF, "index-no-heading", path, "index.md has no section heading (e.g. '# Concepts')")
        for line in doc.entries():
            if line.target is None:
                # A warning: okfgit keeps hand-written bullets below its list (index.py), so an
                # error here could never be fixed by `okfgit index`.
                self.add(OKF, "index-entry-not-link", path, f"entry is not a markdown link: {line.text.strip()!r}",
                         doc.body_line + line.number - 1, WARNING)

    def log(self, doc: Doc) -> None:
        seen: dict[dt.date, int] = {}
        previous: dt.date | None = None
        groups = 0
        for number, line in links.outside_code(_text(doc.body)):
            group = _LOG_GROUP.match(line)
            if group is None:
                if groups == 0 and _LIST_ITEM.match(line):
                    self.add(OKF, "log-entry-undated", doc.path, "log entry above the first '## YYYY-MM-DD' heading",
                             number)
                continue
            groups += 1
            day = _iso_day(group.group(1))
            if day is None:
                self.add(OKF, "log-date-invalid", doc.path, f"log heading {group.group(1)!r} is not a valid "
                         "YYYY-MM-DD date", number)
                continue
            if day in seen:
                self.add(OKF, "log-date-duplicate", doc.path, f"{day.isoformat()} already has a group at line "
                         f"{seen[day]}; add entries there", number)
            elif previous is not None and day > previous:
                self.add(OKF, "log-order", doc.path, f"{day.isoformat()} comes after {previous.isoformat()}; "
                         "groups are newest first", number)
            seen.setdefault(day, number)
            previous = day


class Checker:
    """Runs every check over one scanned tier and collects the findings."""

    def __init__(self, scan: Scan, now: dt.date | dt.datetime, wiki_elsewhere: Callable[[str], bool],
                 only: set[str] | None = None, near: Callable[[set[str] | None], Pairs] | None = None,
                 home_elsewhere: Callable[[str], str | None] = lambda path: None) -> None:
        self.scan = scan
        self.home_elsewhere = home_elsewhere  # the label of another tier that has a concept path
        # The near-duplicate pairs (``near_pairs``); None: not looked for (warnings: a caller
        # counting errors skips them).
        self.near = near
        self.only = only  # report findings about these files only (None: every file)
        self.tier = scan.snap.tier
        self.entries = scan.snap.entries
        self.facts = scan.facts
        self.now = lifecycle.instant_of(now)
        self.wiki_elsewhere = wiki_elsewhere
        self.findings = list(scan.findings)

    def add(self, group: str, code: str, path: str, message: str, line: int | None = None,
            severity: str = ERROR) -> None:
        self.findings.append(Finding(code, severity, path, message, line, group))

    def run(self) -> list[Finding]:
        only = self.only
        facts = sorted(self.facts.items())
        concepts = [(p, f) for p, f in facts if f.readable]
        for path, fact in facts:
            if fact.findings and (only is None or path in only):  # most files have none
                self.findings.extend(self.placed(Finding(code, severity, path, message, line, g))
                                     for g, code, severity, message, line in fact.findings)
        for path, fact in concepts:
            if only is None or path in only:
                self.stale(path, fact)
                self.check_links(path, fact)
        self.duplicate_ids(concepts)
        self.superseded_by(concepts)
        self.resource_paths(concepts)
        if self.near is not None:
            self.near_duplicates(self.near)
        for path, page in sorted(self.scan.pages.items()):
            if page.findings and (only is None or path in only):
                self.findings.extend(Finding(code, severity, path, message, line, g)
                                     for g, code, severity, message, line in page.findings)
        before = len(self.findings)
        check = IndexCheck(self)
        check.run()
        if not self.scan.complete and check.unreached:
            # An index the scoped read did not reach from the root may be reached through
            # one it left out: decide with every index read.
            del self.findings[before:]
            self.scan.read_all()
            IndexCheck(self).run()
        if only is not None:
            self.findings = [f for f in self.findings if f.file in only]
        return self.findings

    def placed(self, finding: Finding) -> Finding:
        """A needs-merge sibling whose concept is in another tier: its remedy names that tier,
        since ``okfgit proposal accept`` settles only a sibling beside its concept."""
        master = index.needs_merge_master(finding.file)
        home = self.home_elsewhere(master) if finding.code == "needs-merge" and master not in self.entries else None
        if home is None:
            return finding
        return replace(finding, message=f"unresolved needs-merge sibling of {home}:{master}: "
                       + needs_merge.settled_elsewhere(f"{self.tier.label}:{finding.file}", f"{home}:{master}"))

    def stale(self, path: str, fact: Checked) -> None:
        moment = lifecycle.parse_instant(fact.stale_after) if fact.stale_after else None
        if moment is not None and self.now >= moment:
            self.add(PROFILE, "stale", path, f"stale since {fact.stale_after} (stale_after); re-verify it "
                     "and move stale_after on", fact.stale_line, WARNING)

    def superseded_by(self, concepts: list[tuple[str, Checked]]) -> None:
        """A ``superseded_by`` must name a concept of the tier (a path or an ``okf_id``)."""
        ids = {f.okf_id for _, f in concepts if f.okf_id is not None}
        for path, fact in concepts:
            for ref in fact.superseded_by:
                if ref in ids or any(p in self.entries for p in lifecycle.ref_candidates(ref, path)):
                    continue
                self.add(PROFILE, "superseded-by-dangling", path, f"superseded_by names {ref}, which is no "
                         "concept path or okf_id in this tier", fact.superseded_line, WARNING)

    def near_duplicates(self, near: Callable[[set[str] | None], Pairs]) -> None:
        """Two concepts that say one fact (``knowledge.similar``): a warning on one of them
        (the one ``only`` asks about), naming the other and the score."""
        for score, a, b in near(self.only):
            if self.only is not None and a not in self.only:
                a, b = b, a
            self.add(PROFILE, "near-duplicate", a, f"nearly duplicates {b} (similarity {score:.2f}): one fact in "
                     "one place: merge them, or supersede one by the other", None, WARNING)

    def resource_paths(self, concepts: list[tuple[str, Checked]]) -> None:
        """A path-valued field (``sources[].resource`` ...) must name a file of the tier."""
        for path, fact in concepts:
            for where, value, line in fact.resources:
                if resources.resolve(path, value, lambda p: links.exists(p, self.entries)) is None:
                    self.add(PROFILE, "resource-dangling", path, f"{where} {value} names no file in the tier "
                             "(a bundle-absolute path, or one relative to the concept's folder or the bundle root)",
                             line, WARNING)

    def duplicate_ids(self, concepts: list[tuple[str, Checked]]) -> None:
        owners: dict[str, list[tuple[str, Checked]]] = {}
        for path, fact in concepts:
            if fact.okf_id and not index.is_needs_merge(path) and not fact.merge_status:
                owners.setdefault(fact.okf_id, []).append((path, fact))
        for okf_id, found in owners.items():
            if len(found) < 2:
                continue
            for path, fact in found:
                others = ", ".join(p for p, _ in found if p != path)
                self.add(PROFILE, "duplicate-okf-id", path, f"okf_id {okf_id} is also used by {others} in this tier",
                         self.key_line(path, "okf_id"))

    def key_line(self, path: str, key: str) -> int | None:
        """The file line of a concept's frontmatter ``key``, read again for the rare finding that
        points at it from across files (not kept in the cache: most concepts never need it)."""
        doc = _read(path, self.scan.snap.blob(path), [])
        return doc.key_line(key) if doc is not None else None

    # links ------------------------------------------------------------------------

    def check_links(self, path: str, fact: Checked) -> None:
        entries = self.entries
        for kind, target, line, where in fact.links:
            if where and where != "/" and where in entries:
                continue  # the usual link, to a file that is there: nothing to report
            self.link(path, fact.body_line, links.Link(kind, target, line))

    def link(self, source: str, body_line: int, link: links.Link) -> str | None:
        """Check one link of ``source``; the tier path it leads to when it resolves inside the tier."""
        line = body_line + link.line - 1
        if link.kind == "wiki":
            if not self.wiki_resolves(link.target):
                self.add(PROFILE, "dangling-wiki-link", source, f"[[{link.target}]] matches no concept "
                         "name or file name in the active tiers", line)
            return None
        target = links.resolve(source, link.target)
        if target.external:
            return None
        if target.escapes:
            self.add(PROFILE, "link-outside-kb", source, f"link to {link.target} leaves the knowledge base",
                     line, WARNING)
            return None
        path = target.path or "index.md"
        if not links.exists(path, self.entries):
            self.add(PROFILE, "dangling-link", source, f"link to {link.target}: {path} does not exist in the tier",
                     line)
            return None
        return path if path in self.entries else index.index_path(path.removesuffix("/index.md").rstrip("/"))

    def wiki_resolves(self, name: str) -> bool:
        name = name.strip()
        if name.endswith(".md"):
            name = name[:-3]
        if name in self.scan.names() or f"{name.lstrip('/')}.md" in self.entries:
            return True
        return self.wiki_elsewhere(name)

class IndexCheck:
    """Index files against the tree: every concept listed, every entry true, all reachable."""

    def __init__(self, checker: Checker) -> None:
        self.c = checker
        self.entries = checker.entries
        # Files with a reading finding (symlink, binary...) already have their own error.
        self.concepts = sorted(p for p, f in checker.facts.items() if f.readable and not index.is_needs_merge(p))
        self.indexes = {p: page for p, page in checker.scan.pages.items()
                        if page.readable and p.rsplit("/", 1)[-1] == "index.md"}
        self.listed: dict[str, set[str]] = {}
        self.edges: dict[str, set[str]] = {}
        self.unreached = False  # some index file read is not reachable from the root index

    @functools.cached_property
    def folders(self) -> set[str]:
        """Every folder of the tier: only an entry that differs from its concept asks (walking the tree)."""
        return index.folders_of(self.entries)

    def run(self) -> None:
        for path, page in sorted(self.indexes.items()):
            self.read_index(path, page)
        omitted = self.omissions()
        self.orphans(omitted)

    def read_index(self, path: str, page: Page) -> None:
        folder = index.parent(path)
        entries = self.entries
        facts = self.c.facts
        listed = self.listed.setdefault(folder, set())
        edges = self.edges.setdefault(path, set())
        # Only okfgit's own index takes its words from the frontmatter; a bundle's keeps its own.
        own = functools.cache(lambda: index.own_form(index.read_page(self.c.scan.snap.blob(path), path, self.folders),
                                                     folder, lambda p: links.exists(p, entries)))
        parent, kb_target = index.parent, index.kb_target
        for number, target, where, conforming, title, description, text in page.entries:
            if where is None:
                continue  # external
            if where == "/":
                self.c.add(PROFILE, "link-outside-kb", path, f"entry links to {target}, outside the knowledge "
                           "base", number, WARNING)
                continue
            resolved = where or "index.md"
            if resolved not in entries:
                if not links.exists(resolved, entries):
                    self.c.add(PROFILE, "index-entry-dangling", path, f"entry links to {target}: "
                               f"{resolved} does not exist", number)
                    continue
                resolved = index.index_path(resolved.removesuffix("/index.md").rstrip("/"))  # a folder link
            edges.add(resolved)
            if parent(resolved) == folder:
                listed.add(resolved)
            if not kb_target(resolved):
                continue  # an entry for a file that is not a concept or folder: the index's outro, a person's
            if not conforming:
                # A warning: the entry is a working OKF link, only in no form okfgit recognises.
                self.c.add(PROFILE, "index-entry-malformed", path, f"entry is not in an index entry form "
                           f"('* [Title](path) - description' or '- [Title](path) \u2014 description'): "
                           f"{text!r}", number, WARNING)
                continue
            fact = facts.get(resolved)
            if fact is None or not fact.readable or not fact.has_frontmatter:
                continue
            item = fact.item
            # ``own()``: the index is okfgit's own form, asked only of an entry that differs
            # (reading the page's form costs more than every other index check).
            if (title != item[0] or description != item[1]) and own():
                want = index.expected_entry(item[0], target, item[1])
                self.c.add(PROFILE, "index-entry-stale", path, f"entry for {resolved} differs from its frontmatter "
                           f"(expected {want!r}; run `okfgit index`)", number)
        for kind, target, line in page.links:
            reached = self.c.link(path, page.body_line, links.Link(kind, target, line))
            if reached is not None:
                edges.add(reached)

    @functools.cached_property
    def homes(self) -> list[tuple[str, str, str]]:
        """Each concept with its folder and that folder's index path (both asked twice)."""
        out = []
        folders: dict[str, tuple[str, str]] = {}  # each folder's strings made once, shared by its concepts
        for path in self.concepts:
            folder = index.parent(path)
            known = folders.get(folder)
            if known is None:
                known = folders[folder] = (folder, index.index_path(folder))
            out.append((path, *known))
        return out

    def omissions(self) -> set[str]:
        """Concepts their folder's index does not list, and folders with no index at all."""
        omitted: set[str] = set()
        homes = self.homes
        # Every folder above a concept: those above its folder's index path are the same.
        for folder in sorted(index.folders_of({own for _, _, own in homes}) if homes else ()):
            if index.index_path(folder) not in self.entries:
                where = f"folder {folder}/" if folder else "the root folder"
                self.c.add(PROFILE, "index-missing", index.index_path(folder), f"{where} has concepts but no "
                           "index.md (run `okfgit index`)")
        indexes, listed = self.indexes, self.listed
        for path, folder, own in homes:
            if own in indexes and path not in listed.get(folder, ()):
                omitted.add(path)
                self.c.add(PROFILE, "index-omission", own, f"does not list "
                           f"{path.rsplit('/', 1)[-1]} (run `okfgit index`)")
        return omitted

    def orphans(self, omitted: set[str]) -> None:
        """Index files and concepts no chain of index links from the root index reaches.

        Reported where the chain breaks: an unreached index whose parent index is
        reached; a concept only when nothing above already explains it.
        """
        reached: set[str] = set()
        todo = ["index.md"] if "index.md" in self.indexes else []
        while todo:
            path = todo.pop()
            if path in reached:
                continue
            reached.add(path)
            todo.extend(t for t in self.edges.get(path, ()) if t in self.indexes and t not in reached)
            reached.update(t for t in self.edges.get(path, ()) if t not in self.indexes)
        for path in sorted(self.indexes):
            if path in reached or path == "index.md":
                continue
            self.unreached = True
            folder = index.parent(path)
            above = index.index_path(index.parent(folder))
            if above in reached:
                self.c.add(PROFILE, "orphan", path, f"not reachable from the root index: {above} has no entry "
                           f"for {folder.rsplit('/', 1)[-1]}/ ({self.remedy(folder)})")
        for path, _, own in self.homes:
            if path not in reached and path not in omitted and own in reached:
                self.c.add(PROFILE, "orphan", path, "not reachable from the root index through index links")

    def remedy(self, folder: str) -> str:
        """What fixes an unreached index: ``okfgit index`` links it from its parent, or removes it
        when its folder has no concept left; one that keeps a person's words is theirs to move."""
        if any(p.startswith(folder + "/") and okf.is_concept_path(p) for p in self.entries):
            return "run `okfgit index`"
        if index.emptied(self.c.scan.snap, folders=[folder]).get(index.index_path(folder), b"") is None:
            return "its folder has no concept left: run `okfgit index`, which removes it"
        return ("its folder has no concept left and it holds a person's words: move what is worth keeping "
                "elsewhere, then delete it")


# -- running it ------------------------------------------------------------------------


def check_snapshot(snap: Snapshot, today: dt.date | dt.datetime, wiki_elsewhere: Callable[[str], bool] | None = None,
                   worktree: bool = False, *, facts: dict[str, Checked] | None = None,
                   only: set[str] | None = None, near: Callable[[set[str] | None], Pairs] | None = None) -> TierReport:
    """Every finding for one tier's snapshot (``today``: a date means its midnight UTC).

    ``facts``: the snapshot's ``checked_facts`` when the caller has them already. ``only``:
    report the findings about these files alone, doing only the work they need: the index
    files of their folders and of the folders above are read, not every index, and the tree
    is looked up path by path, not walked (unless a finding needs every path: a link to a
    missing file or to a folder, a ``[[name]]`` link, an index the root index does not
    reach). With ``only``, ``facts`` may hold just the concepts those findings involve (see
    ``verbs.review``), and the report counts the concepts it checked. ``near``: the
    near-duplicate pairs (``near_pairs``; None: not looked for).
    """
    wanted = None
    if only is not None:
        wanted = {index.index_path(folder) for folder in index.folders_of(only) | {""}} | set(only)
    scan = Scan(snap, facts, wanted)
    findings = Checker(scan, today, wiki_elsewhere or (lambda name: False), only, near).run()
    concepts = sum(1 for p in scan.snap.entries if okf.is_concept_path(p)) if only is None else len(scan.facts)
    return TierReport(scan.snap.tier, scan.snap.commit, worktree, concepts, findings)


def check_tiers(ws: Workspace, tiers: list[Tier], today: dt.date | dt.datetime, *,
                read: Callable[[Tier], Snapshot] = snapshot, worktree: bool = False,
                progress: Progress = silent, near: bool = True,
                stores: Stores | None = None) -> tuple[list[TierReport], list[str]]:
    """Every finding for each of ``tiers`` (as ``read`` gives them: at HEAD, or the working
    tree), ``[[name]]`` links resolved across the workspace's other active tiers; and a note
    for each tier skipped because it holds no knowledge base. What ``doctor`` reports, and
    what ``sync`` and ``status`` count (their errors: without ``near``, no near-duplicate,
    which is a warning, is looked for). The facts read, and each tier's errors at HEAD
    (``errors_at_head``), are staged in ``stores`` (the run's; without it, saved here)."""
    run_stores = stores if stores is not None else Stores()
    scans: dict[str, Scan] = {}
    skipped: list[str] = []
    for tier in tiers:
        snap = read(tier)
        if not snap.entries:
            where = "in its working tree" if worktree else "at HEAD"
            skipped.append(f"{tier.label} tier skipped: no knowledge base {where} in {tier.root}")
            continue
        scans[tier.label] = Scan(snap, checked_facts(snap, progress, run_stores))
    elsewhere = _Elsewhere(ws, scans, read)
    reports = []
    for label, scan in scans.items():
        pairs = None
        if near:
            facts = scan.facts
            pairs = near_pairs(scan.snap, {p: f.similar for p, f in facts.items()}, getattr(facts, "tree", None),
                               None if worktree else _store_of(run_stores, scan.snap.tier))
        findings = Checker(scan, today, elsewhere.lookup(label), near=pairs,
                           home_elsewhere=elsewhere.holder(label)).run()
        concepts = sum(1 for p in scan.snap.entries if okf.is_concept_path(p))
        reports.append(TierReport(scan.snap.tier, scan.snap.commit, worktree, concepts, findings))
    if not worktree and reports:
        heads = _heads(ws)
        for report in reports:
            errors = [f for f in report.findings if f.severity == ERROR]
            facts = scans[report.tier.label].facts
            owners: dict[str, list[str]] = {}
            for f in errors:
                if f.code == "duplicate-okf-id":
                    owners.setdefault(str(facts[f.file].okf_id), []).append(f.file)
            _record(_store_of(run_stores, report.tier), report.tier, heads, errors,
                    {k: sorted(v) for k, v in owners.items()})
    if stores is None:
        run_stores.save()
    return reports, skipped


def errors_at_head(ws: Workspace, tiers: list[Tier], today: dt.date | dt.datetime,
                   stores: Stores) -> dict[str, list[Finding]]:
    """Doctor's errors in each of ``tiers`` at HEAD, by tier label: one lookup in the tier's
    store when the last check (``doctor``, ``sync`` or ``status``) saw exactly the trees the
    active tiers have now (a tier's errors depend on no clock, and on the other tiers only
    through ``[[name]]`` links); when only the tier's own tree moved since, those errors
    brought forward with what the change reaches checked again (``_brought_forward``); else
    ``check_tiers`` on those tiers now. Each tier's errors are recorded for the next asker."""
    heads = _heads(ws)
    out: dict[str, list[Finding]] = {}
    unknown: list[Tier] = []
    for tier in tiers:
        store = _store_of(stores, tier)
        found = store.record(_errors_name(tier))
        try:
            errors = [Finding(code, ERROR, file, message, line, group=group)
                      for group, code, file, message, line in found["errors"]]
            if found["trees"] != heads:
                errors = _brought_forward(tier, store, found, heads, errors, today, _Elsewhere(ws, {}, snapshot))
        except (KeyError, TypeError, ValueError, OkfError, OSError):  # the whole check says what is wrong
            unknown.append(tier)
            continue
        out[tier.label] = errors
    if unknown:
        reports, _ = check_tiers(ws, unknown, today, near=False, stores=stores)  # near-duplicates are warnings
        out.update({r.tier.label: [f for f in r.findings if f.severity == ERROR] for r in reports})
    return out


def _brought_forward(tier: Tier, store: Store, found: dict[str, Any], heads: dict[str, str | None],
                     errors: list[Finding], today: dt.date | dt.datetime, elsewhere: _Elsewhere) -> list[Finding]:
    """Doctor's errors in ``tier`` at HEAD from those ``found`` recorded at an earlier tree: the
    files the change reaches are checked again (``check_snapshot`` with ``only``, from the
    store's facts), the others keep their recorded errors; recorded in turn, the store's facts
    moved to HEAD's tree. A changed file reaches the links and index entries leading to it (when
    it came or went, or its entry words changed), its folder's index, the concepts sharing an
    okf_id it took or left, the ``[[name]]`` links its names answer; an edited index, the
    concepts whose entries came or went. Their checks read the owners of their okf_ids
    (``found["ids"]``), every concept of a reached index's folder and entries, the concepts
    their ``[[name]]`` links may name. ValueError where only the whole check can tell: another
    tier moved, an index came or went or links a folder anew, a file came or went in a folder
    with no index, the store's facts are of another tree."""
    label, was = tier.label, found["trees"]
    if {k: v for k, v in was.items() if k != label} != {k: v for k, v in heads.items() if k != label}:
        raise ValueError("another tier's tree moved: [[name]] links may resolve otherwise")
    repo, old, new = tier.open(), was[label], heads[label]
    commit = repo.head_commit()
    if old is None or new is None or commit is None:
        raise ValueError("no knowledge base on one side")
    changed = sorted({c.path for c in repo.diff_paths(old, new)})
    kind = doctor_kind(tier)
    entries = TreeEntries(repo, commit, tier.prefix, new)
    snap = Snapshot(tier, commit, entries, repo.read_blob)
    before = {p for p, e in repo.entries_in(old, changed).items() if e is not None and e.is_blob}
    then = _stored_facts(store, kind.name, label, old, [p for p in before if kind.wants(p)], [], ())
    now = {p: fact_of(tier.name, p, entries[p], b"" if entries[p].is_link else snap.blob(p))
           for p in changed if p in entries and kind.wants(p)}
    if any(p not in then for p in before if kind.wants(p)):
        raise ValueError("a file of the old tree has no facts in the store")
    reach = set(changed)
    paths: set[str] = set()  # files that came or went, or whose entry words changed
    names: set[str] = set()  # [[name]] targets that may resolve otherwise
    ids: set[str] = set()  # okf_ids whose owners changed
    for p in changed:
        a, b = then.get(p), now.get(p)
        if (p in before) != (p in entries):
            if any(index.index_path(f) not in entries for f in index.folders_of([p])):
                raise ValueError("a file came or went in a folder with no index")
            paths.add(p)
        if p.rsplit("/", 1)[-1] == "index.md":
            if a is None or b is None:
                raise ValueError("an index came or went")
            for target in _edges(p, a) ^ _edges(p, b):
                if not okf.is_concept_path(target):
                    raise ValueError("an index gained or lost a link to a folder")
                reach.add(target)
        elif okf.is_concept_path(p):
            if _owner_id(p, a) != _owner_id(p, b):
                ids.update(k for k in (_owner_id(p, a), _owner_id(p, b)) if k)
            names.update(_names(p, a) ^ _names(p, b))
            if _entry_words(a) != _entry_words(b):
                reach.add(index.index_path(index.parent(p)))
                paths.add(p)
    needles = _needles(paths | ids, names)
    facts = {**_stored_facts(store, kind.name, label, old, reach - set(changed), needles, changed), **now}
    reach.update(p for p, f in facts.items() if p not in now and _leads_to(p, f, paths, names, ids))
    need: set[str] = set()  # what the checks of the reached files read
    wiki: set[str] = set()
    for path in sorted(reach):
        entry = entries.get(path)
        if entry is not None and path.rsplit("/", 1)[-1] == "index.md":
            folder = index.parent(path)
            need.update(f"{folder}/{name}" if folder else name for name in repo.listing(new, folder))
            page = facts[path] = facts.get(path) or page_of(path, entry, snap.blob(path))
            need.update(_edges(path, page))
        fact = facts.get(path)
        need.update(found["ids"].get(fact.okf_id, ()) if type(fact) is Checked and fact.okf_id else ())
        wiki.update(_wiki_targets(fact))
    need = {p for p in need if okf.is_concept_path(p) and p not in facts}
    if need or wiki:
        facts.update(_stored_facts(store, kind.name, label, old, need, _needles((), wiki), changed))
    concepts = {p: f for p, f in facts.items() if type(f) is Checked and p in entries}
    pages = {p: f for p, f in facts.items() if type(f) is Page and p in entries}
    report = check_snapshot(snap, today, elsewhere.lookup(label), facts=Facts(concepts, pages), only=reach)
    errors = [f for f in errors if f.file not in reach] + [f for f in report.findings if f.severity == ERROR]
    owners = {k: v for k, v in found["ids"].items() if k not in ids}
    for k in ids:
        having = sorted(p for p, f in concepts.items() if _owner_id(p, f) == k)
        if len(having) > 1:
            owners[k] = having
    _record(store, tier, heads, errors, owners)
    rows = {p: Row(f.oid, json.dumps(f, separators=(",", ":"), ensure_ascii=False)) for p, f in now.items()}
    store.stage_catalog(kind.name, label, new, commit, {**{p: None for p in then if p not in now}, **rows}.items, old)
    return errors


def _stored_facts(store: Store, kind: str, label: str, tree: str, paths: Collection[str], containing: list[str],
                  changed: Collection[str]) -> dict[str, Checked | Page]:
    """Doctor's stored facts at ``tree`` of ``paths`` and of the files whose facts hold one of
    the strings ``containing`` (``Store.rows``), the ``changed`` files left out (their stored
    facts are of the old tree)."""
    found = store.rows(kind, label, tree, sorted(paths), containing)
    if found is None:
        raise ValueError("doctor's facts in the store are of another tree")
    return {p: fact_from_json(json.loads(row.value)) for p, row in found.items()
            if row.value is not None and p not in changed}


def _needles(quoted: Collection[str], plain: Collection[str]) -> list[str]:
    """What to look for in the stored facts' JSON: ``quoted`` strings as JSON strings, ``plain``
    ones as they appear inside one (a ``[[name]]`` target may add ``.md`` or a leading ``/``);
    none that holds another (which finds every fact it would)."""
    out: list[str] = []
    found = {json.dumps(s, ensure_ascii=False) for s in quoted}
    for needle in sorted(found | {json.dumps(s, ensure_ascii=False)[1:-1] for s in plain}, key=len):
        if not any(kept in needle for kept in out):
            out.append(needle)
    return out


def _record(store: Store, tier: Tier, heads: dict[str, str | None], errors: list[Finding],
            owners: dict[str, list[str]]) -> None:
    """Stage the record of ``tier``'s errors at ``heads`` and the owners of each duplicated okf_id."""
    store.stage_record(_errors_name(tier), {"trees": heads, "ids": owners,
                                            "errors": [[f.group, f.code, f.file, f.message, f.line] for f in errors]})


def _owner_id(path: str, fact: Checked | Page | None) -> str | None:
    """The okf_id ``duplicate-okf-id`` counts ``path`` an owner of, if any."""
    if type(fact) is not Checked or not fact.readable or fact.merge_status or index.is_needs_merge(path):
        return None
    return fact.okf_id or None


def _names(path: str, fact: Checked | Page | None) -> set[str]:
    """What a ``[[name]]`` link may say to reach the concept at ``path`` (none when it is absent)."""
    if fact is None:
        return set()
    stem = path.rsplit("/", 1)[-1][:-3]
    return {stem, path[:-3]} | ({fact.name} if type(fact) is Checked and fact.readable and fact.name else set())


def _entry_words(fact: Checked | Page | None) -> Any:
    """What index checks read of a concept: whether it takes part, and its entry's title and description."""
    return (fact.readable, fact.has_frontmatter, fact.item[:2]) if type(fact) is Checked else None


def _edges(path: str, page: Checked | Page | None) -> set[str]:
    """Where the entries and other links of the index at ``path`` lead inside the tier."""
    if type(page) is not Page:
        return set()
    out = {where for _, _, where, *_ in page.entries}
    out.update(links.leads_to(path, target) for kind, target, _ in page.links if kind != "wiki")
    return {where for where in out if where is not None and where != "/"}


def _wiki_targets(fact: Checked | Page | None) -> set[str]:
    """The ``[[name]]`` links of a file, as the names they ask for."""
    found = [link[1] for link in fact.links if link[0] == "wiki"] if fact is not None else []
    return {t[:-3] if t.endswith(".md") else t for t in found}


def _leads_to(path: str, fact: Checked | Page, paths: set[str], names: set[str], ids: set[str]) -> bool:
    """Whether the unchanged file at ``path`` has a finding that depends on the change: a link
    or entry leading to one of ``paths``, a ``[[name]]`` link asking for one of ``names``, an
    okf_id in ``ids``."""
    if _owner_id(path, fact) in ids or any(t in names or t.lstrip("/") in names for t in _wiki_targets(fact)):
        return True
    if type(fact) is Page:
        return bool(_edges(path, fact) & paths)
    return any(where in paths for kind, _, _, where in fact.links if kind != "wiki")


def _errors_name(tier: Tier) -> str:
    return f"doctor-errors {tier.label}"


def _store_of(stores: Stores, tier: Tier) -> Store:
    return stores.of(tier.open().common_dir)


def _heads(ws: Workspace) -> dict[str, str | None]:
    """The KB tree at HEAD of every active tier, by label (None: no commit or no KB)."""
    out: dict[str, str | None] = {}
    for tier in ws.active():
        repo = tier.open()
        head = repo.head_commit()
        out[tier.label] = repo.tree_oid(head, tier.prefix) if head is not None else None
    return out


class _Elsewhere:
    """``[[name]]`` resolution across the other active tiers, each scanned only if needed."""

    def __init__(self, ws: Workspace, scans: dict[str, Scan], read: Callable[[Tier], Snapshot]) -> None:
        self.ws = ws
        self.scans = dict(scans)
        self.read = read
        self._active: list[Tier] | None = None

    def lookup(self, label: str) -> Callable[[str], bool]:
        def found(name: str) -> bool:
            for tier in self.active():
                if tier.label != label and name in self.scan(tier).names():
                    return True
            return False

        return found

    def holder(self, label: str) -> Callable[[str], str | None]:
        """The label of the first other active tier (by precedence) that has a path."""
        def found(path: str) -> str | None:
            return next((t.label for t in self.active() if t.label != label and path in self.scan(t).snap.entries),
                        None)

        return found

    def active(self) -> list[Tier]:
        if self._active is None:
            self._active = self.ws.active()
        return self._active

    def scan(self, tier: Tier) -> Scan:
        if tier.label not in self.scans:
            self.scans[tier.label] = Scan(self.read(tier))
        return self.scans[tier.label]


def frontmatter_errors(tier: Tier, path: str, data: bytes, today: dt.date | None = None, *,
                       parsed: okf.Parsed | None = None) -> list[Finding]:
    """The errors doctor would report for ``data`` committed at ``path`` in ``tier``,
    judged on the file alone (links aside): what capture checks before it commits
    (``parsed``: ``data`` split, when capture has it already)."""
    if not okf.is_concept_path(path):
        return []
    fact = checked_of(tier.name, path, Entry(blob_oid(data), FILE_MODE), data, parsed)
    return [Finding(code, severity, path, message, line, g)
            for g, code, severity, message, line in fact.findings if severity == ERROR]


# -- small helpers ---------------------------------------------------------------------


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip()) or value == [] or value == {}


def _kind(value: Any) -> str:
    return {list: "a list", dict: "a mapping", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__)


def _text(body: bytes) -> str:
    return body.decode("utf-8").lstrip("\ufeff")


def _has_heading(text: str) -> bool:
    """An ATX heading (``# x``) or a setext one (a line underlined with ``===``)."""
    previous = (0, "")
    for number, line in links.outside_code(text):
        if index.HEADING.match(line):
            return True
        if _SETEXT.match(line) and previous[0] == number - 1 and previous[1].strip():
            return True
        previous = (number, line)
    return False


def _iso_day(text: str) -> dt.date | None:
    if not _ISO_DAY.match(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None
