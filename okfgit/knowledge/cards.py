"""The one concept record: a ``Card``, a pure function of one blob, cached per tier by tree diff.

A ``Card`` holds what projection, capture, the read verbs and the reference grammar need
of a concept: its blob OID, ``okf_id``, origin filename, title, description (and the first
sentence of the body for a concept without one), type, tags, frontmatter ``name``, OKF's
lifecycle and trust (``status``, ``superseded_by``, ``stale_after``, human-reviewed, read
by ``format.lifecycle``) and the links of its body. ``card_of`` is the only place these
values are read out of a concept's frontmatter (``snapshot.Concept`` asks the same helpers).

A tier's cards are kept in the store of the tier's own repository (``local/store.py``) with
the tree-diff machinery of ``catalog``: one row per concept path, the KB tree they
describe, updated from a tree diff, every card carrying its blob OID. A lookup then parses
nothing, and stale or missing rows only cost the parsing they save; they can never change
an answer. They can be deleted at any time.

A ``TierCard`` is a card where it was found: tier label, KB path, card.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from okfgit.errors import OkfError, UsageError
from okfgit.format import agent_memory
from okfgit.format import concept as okf
from okfgit.format.names import is_needs_merge
from okfgit.format import lifecycle
from okfgit.git.objects import Entry
from okfgit.git.repository import Repo
from okfgit.knowledge import catalog
from okfgit.knowledge.catalog import Kind, TierCatalog
from okfgit.knowledge.tiers import Tier
from okfgit.local.store import LOOKUP, Store, Stores
from okfgit.progress import Progress, silent

if TYPE_CHECKING:
    from okfgit.format.markdown import Link

F = TypeVar("F", bound=catalog.Fact)
_SEP = "\0"  # never in a parsed concept body (okf.split refuses NUL), so it can join link fields


class Card(NamedTuple):
    """One concept blob as every reader sees it (a tuple: 10,000 of them load fast)."""

    oid: str
    okf_id: str | None  # the frontmatter ``okf_id`` when it is a non-empty string
    origin: str | None  # ``okf_origin``: the memory file name capture took it from
    title: str  # ``title``, else made from the file name
    description: str  # ``description`` as one line ("" when absent)
    summary: str  # the body's first sentence when there is no description, else ""
    type: str
    tags: list[str]
    name: str  # the frontmatter ``name`` as one line ("" when absent)
    status: str  # OKF's lifecycle status: draft | stable | deprecated (absent: stable), or as written
    superseded_by: list[str]
    stale_after: str  # OKF's ``stale_after`` as okfgit shows an instant ("" when absent or unreadable)
    source: str  # ``okf_source`` as one line: authored, claude-memory, gemini-cli... ("" when absent)
    verified: bool  # human-reviewed (OKF ``verified`` by a human: actor, or unreadable: fail closed)
    summary_line: int  # the last line holding a SUMMARY_KEYS key (Claude reads only the first 30)
    flaw: str  # why it is no concept to project or capture into (no string ``type``), else ""

    @property
    def hook(self) -> str:
        """One line saying what the concept is: its description, else its first sentence."""
        return self.description or self.summary

    @property
    def captured(self) -> bool:
        """An agent wrote it first (its ``okf_source`` is an agent's memory)."""
        return self.source in agent_memory.SOURCES

    @property
    def origin_key(self) -> str | None:
        """The agent's file it was captured from, named so that two agents' files never meet
        (``agent_memory.origin_key``)."""
        return agent_memory.origin_key(self.source, self.origin)


# -- the frontmatter rules, one place ----------------------------------------------------------


def okf_id_of(meta: dict[str, Any]) -> str | None:
    value = meta.get("okf_id")
    return value if isinstance(value, str) and value else None


def title_of(meta: dict[str, Any], path: str) -> str:
    return okf.one_line(meta.get("title")) or okf.title_from_path(path)


def tags_of(meta: dict[str, Any]) -> list[str]:
    tags = meta.get("tags")
    if isinstance(tags, list):
        return [str(t) for t in tags]
    if isinstance(tags, str):
        return [tags]
    return []


def name_of(meta: dict[str, Any]) -> str:
    return okf.one_line(meta.get("name")) if meta.get("name") else ""


def slug_of(path: str) -> str:
    return path.rsplit("/", 1)[-1][:-3]


def card_of(label: str, path: str, entry: Entry, data: bytes) -> Card:
    """The card of the blob at ``path``; ValidationError naming ``label:path`` when it is not a concept."""
    parsed = okf.parse_concept(data, f"{label}:{path}", is_link=entry.is_link)
    meta = parsed.meta
    origin = meta.get("okf_origin")
    description = okf.one_line(meta.get("description"))
    summary = "" if description else okf.first_sentence(parsed.body.decode("utf-8", errors="replace"))
    life = lifecycle.lifecycle(meta)
    kind = meta.get("type")
    flaw = ""
    if not isinstance(kind, str) or not kind.strip():
        what = "has no type" if kind is None or isinstance(kind, str) else f"has a type that is not a string ({kind!r})"
        flaw = f"{label}:{path}: invalid frontmatter: {what}"
    return Card(
        oid=entry.oid,
        okf_id=okf_id_of(meta),
        origin=origin if isinstance(origin, str) and origin else None,
        title=title_of(meta, path),
        description=description,
        summary=summary,
        type=sys.intern(okf.one_line(meta.get("type"))),  # a few values shared by many cards
        tags=[sys.intern(tag) for tag in tags_of(meta)],
        name=name_of(meta),
        status=life.status,
        superseded_by=list(life.superseded_by),
        stale_after=life.stale_label() or "",
        source=sys.intern(okf.one_line(meta.get("okf_source"))) if meta.get("okf_source") is not None else "",
        verified=lifecycle.trust(meta).human_reviewed,
        summary_line=max(okf.key_lines(data, parsed=parsed).values(), default=0),
        flaw=flaw,
    )


def modified(repo: Repo, tier: Tier, old_tree: str, new_tree: str, limit: int) -> list[tuple[str, Card, Card]] | None:
    """The concepts changed in place between two KB trees of ``tier``: (path, old card, new
    card) each, in path order. None when anything else happened to a concept path (added,
    removed, renamed, its mode changed, a side unreadable), when more than ``limit`` changed,
    or when a tree is gone: the caller then reads the whole tier as usual."""
    try:
        changes = [c for c in repo.diff_paths(old_tree, new_tree) if okf.is_concept_path(c.path)]
    except Exception:  # noqa: BLE001 - a tree gc'd away (or any diff failure): not a small change
        return None
    if len(changes) > limit or any(c.old is None or c.new is None for c in changes):
        return None
    where = sorted(c.path for c in changes)
    before, after = repo.entries_in(old_tree, where), repo.entries_in(new_tree, where)
    out: list[tuple[str, Card, Card]] = []
    for path in where:
        a, b = before.get(path), after.get(path)
        if a is None or b is None or a.mode != b.mode or not a.is_blob or a.is_link:
            return None
        try:
            out.append((path, card_of(tier.label, path, a, repo.read_blob(a.oid)),
                        card_of(tier.label, path, b, repo.read_blob(b.oid))))
        except (OkfError, KeyError, ValueError):
            return None
    return out


_FIELDS = len(Card._fields)


def _from_json(value: list[Any]) -> Card:
    if len(value) != _FIELDS:
        raise ValueError("a card of another shape")  # the whole cache is then read again
    return tuple.__new__(Card, value)  # the tuple as it is: 10,000 of them, no per-field call


def _lookup_row(path: str, card: Card) -> tuple[str | None, str, str, str, str, str, str, str]:
    """What the store's lookup keeps of a card (``local/store.py``): okf_id, slug, ``name``,
    title case-folded, then what ``search`` matches, filters and ranks by (its ``Match``): the
    words, status, type and tags."""
    match = _match("", path, card)
    return card.okf_id, slug_of(path), card.name, card.title.casefold(), match.words, match.status, match.type, \
        match.tags


CARDS: catalog.Kind[Card] = catalog.Kind("cards", card_of, _from_json, lookup=_lookup_row)


class LinkFacts(NamedTuple):
    """Where one concept's body links to: what ``links`` and backlinks read, kept apart from
    the cards so that a reader that follows no link parses none of them."""

    oid: str
    head: int  # lines before the body, so link lines count from the top of the file
    links: str  # "kind\0target\0line\0..." for each link of the body, in order

    def parsed(self) -> list[Link]:
        """The links of the body (line numbers within the body, as ``markdown.extract`` gives)."""
        if not self.links:
            return []
        from okfgit.format.markdown import Link

        parts = self.links.split(_SEP)
        return [Link(parts[i], parts[i + 1], int(parts[i + 2])) for i in range(0, len(parts), 3)]


def link_facts_of(label: str, path: str, entry: Entry, data: bytes) -> LinkFacts:
    """The links of the blob at ``path``; ValidationError naming ``label:path`` when it is not a
    concept (as ``card_of``: a blob is unreadable for both or for neither)."""
    parsed = okf.parse_concept(data, f"{label}:{path}", is_link=entry.is_link)
    from okfgit.format import markdown as links  # only where a concept's links are read

    found = links.extract(parsed.body)
    return LinkFacts(entry.oid, data[: len(data) - len(parsed.body)].count(b"\n"),
                     _SEP.join(f"{link.kind}{_SEP}{link.target}{_SEP}{link.line}" for link in found))


def _links_from_json(value: list[Any]) -> LinkFacts:
    oid, head, found = value
    return LinkFacts(str(oid), int(head), str(found))


LINKS: catalog.Kind[LinkFacts] = catalog.Kind("links", link_facts_of, _links_from_json)


class TierCard(NamedTuple):
    """One concept of one tier: where it is (tier label, KB path) and its card."""

    tier: str
    path: str
    card: Card

    @property
    def oid(self) -> str:
        return self.card.oid

    @property
    def okf_id(self) -> str | None:
        return self.card.okf_id

    @property
    def title(self) -> str:
        return self.card.title

    @property
    def description(self) -> str:
        return self.card.description

    @property
    def type(self) -> str:
        return self.card.type

    @property
    def tags(self) -> list[str]:
        return list(self.card.tags)

    @property
    def status(self) -> str:
        return self.card.status

    @property
    def deprecated(self) -> bool:
        return self.card.status == lifecycle.DEPRECATED

    @property
    def superseded_by(self) -> list[str]:
        return list(self.card.superseded_by)

    @property
    def stale_after(self) -> str | None:
        return self.card.stale_after or None

    def is_stale(self, now: dt.datetime) -> bool:
        """OKF §5.5: stale when now >= stale_after."""
        moment = lifecycle.parse_instant(self.card.stale_after) if self.card.stale_after else None
        return moment is not None and now >= moment

    @property
    def slug(self) -> str:
        return slug_of(self.path)

    @property
    def key(self) -> str:
        """What the merge tells concepts apart by: the ``okf_id``, else ``<tier>:<path>``."""
        return self.card.okf_id or f"{self.tier}:{self.path}"

    @property
    def citation(self) -> str:
        return f"{self.tier}:{self.path}@{self.card.oid[:7]}"


class Match(NamedTuple):
    """A concept whose title or description holds every word of a search: what ``search``
    filters and ranks it by, read without its card (``nav.search`` reads the cards of the
    ones it shows)."""

    tier: str
    path: str
    okf_id: str | None
    words: str  # the title and the description lower-cased, the title on the first line (``_fold``)
    status: str
    type: str
    tags: str  # a JSON list

    @property
    def title_words(self) -> str:
        """The title lower-cased (a title is one line: ``one_line``, ``title_from_path``)."""
        return self.words.split("\n", 1)[0]

    @property
    def deprecated(self) -> bool:
        return self.status == lifecycle.DEPRECATED

    def tag_list(self) -> list[str]:
        return list(json.loads(self.tags))


class TierCards:
    """One tier at one commit (default HEAD): its cards from the store, its blobs read on demand.

    ``repo``, ``commit`` and ``tree`` may be given when the caller already has them
    (projection); ``blobs`` collects every blob read while building (OID -> bytes).
    ``stores``: the run's stores (``local/store.py``), which keep what was built here until
    the run saves them; without it (a reader: the read verbs, MCP) the tier's store is read
    and written here.

    A question about a few concepts (``card_at``, ``named``, ``with_id``, ``matching``...) is
    answered from the store's lookup when the store's cards and lookup describe this tree
    (``_store``), and from every card (``catalog``, read on first use) otherwise; a reader
    that had to read every card writes the lookup for the next one.
    """

    def __init__(self, tier: Tier, *, repo: Repo | None = None, commit: str | None = None, tree: str | None = None,
                 blobs: dict[str, bytes] | None = None, progress: Progress = silent,
                 stores: Stores | None = None) -> None:
        self.tier = tier
        self.label = tier.label
        if repo is None and tier.exists():
            repo = tier.open()
        self.repo = repo
        if commit is None and repo is not None:
            commit = repo.head_commit()
        self.commit = commit
        self._build = (tree, blobs, progress)
        self._stores = stores if stores is not None else Stores()
        self._own = stores is None  # a reader: what is read here is saved at once
        self._index = False  # the lookup could not answer: a reader writes it

    @cached_property
    def catalog(self) -> TierCatalog[Card]:
        """Every card of the tier (read only when a question needs them all)."""
        tree, blobs, progress = self._build
        built = _catalog(CARDS, self.repo, self.tier, self.commit, tree, blobs, progress, self._stores, self._index)
        if self._own:
            self._stores.save()
            self.__dict__.pop("_store", None)  # saved: the next question asks the store again
        return built

    @cached_property
    def tree(self) -> str | None:
        """The tier's KB tree at the commit."""
        store = self._store
        if store is not None:
            head = store.head(CARDS.name, self.label)
            if head is not None:
                return head[0]
        return self.catalog.tree or None

    @cached_property
    def _store(self) -> Store | None:
        """The tier's store when its cards and their lookup describe this tree (a reader first
        brings them there from a tree a few changes away: ``catalog.forward``), else None. A
        reader that read every card (and saved them) asks it still: a kept reader (the MCP
        server) would otherwise search every card in memory until a HEAD moves."""
        if ("catalog" in self.__dict__ and not self._own) or self.repo is None or self.commit is None:
            return None
        store = self._stores.of(self.repo.common_dir)
        cards, looked = store.head(CARDS.name, self.label), store.head(LOOKUP, self.label)
        if cards is not None and looked is not None and cards[0] == looked[0]:
            tree = self._build[0] or (cards[0] if cards[1] == self.commit else
                                      self.repo.tree_oid(self.commit, self.tier.prefix))
            if cards[0] == tree or (tree is not None and self._forward(store, CARDS, tree)
                                    and store.head(LOOKUP, self.label) == store.head(CARDS.name, self.label)):
                return store
        self._index = self._own
        return None

    def _forward(self, store: Store, kind: Kind[F], tree: str) -> bool:
        """A reader's store of ``kind`` facts brought to ``tree`` by a tree diff and saved."""
        if not self._own or self.repo is None or self.commit is None or \
                not catalog.forward(kind, self.repo, self.tier, store, self.commit, tree):
            return False
        self._stores.save()
        return (store.head(kind.name, self.label) or ("",))[0] == tree

    def _ask(self, rows: list[tuple[str, str]] | None) -> list[TierCard] | None:
        """The store's answer as concepts; None when it gave none or a row is unreadable (the
        store is then not asked again: every card is read)."""
        if rows is not None:
            try:
                return [TierCard(self.label, path, _from_json(json.loads(value))) for path, value in rows]
            except (ValueError, TypeError):
                pass
        self._give_up()
        return None

    def _give_up(self) -> None:
        """The store could not answer: it is not asked again, every card is read (and a reader
        writes the lookup again)."""
        self.__dict__["_store"] = None
        self._index = self._own

    def _lookup(self, column: str, value: str, prefix: bool = False) -> list[TierCard] | None:
        store = self._store
        return self._ask(store.looked_up(CARDS.name, self.label, column, value, prefix)) if store else None

    @cached_property
    def cards(self) -> dict[str, TierCard]:
        """Every readable concept by path, in path order."""
        facts = self.catalog.facts
        label, make = self.label, tuple.__new__
        return {path: make(TierCard, (label, path, facts[path])) for path in sorted(facts)}

    @cached_property
    def folded(self) -> dict[str, str]:
        """Each concept's title and description lower-cased, by path: what ``search`` matches words in."""
        return {path: _fold(card) for path, card in self.catalog.facts.items()}

    @cached_property
    def by_okf_id(self) -> dict[str, list[TierCard]]:
        """The concepts that answer for each ``okf_id``, by path (``needs-merge`` siblings do not).
        Kept with the tier, so a view rebuilt because another tier moved does not redo it."""
        out: dict[str, list[TierCard]] = {}
        for concept in self.cards.values():
            if concept.okf_id and not is_needs_merge(concept.path):
                out.setdefault(concept.okf_id, []).append(concept)
        return out

    @cached_property
    def by_name(self) -> dict[str, list[str]]:
        """The paths of the concepts each slug (file stem) or frontmatter ``name`` names, in path order."""
        out: dict[str, list[str]] = {}
        for path, card in self.catalog.facts.items():
            slug = slug_of(path)
            out.setdefault(slug, []).append(path)
            name = card.name
            if name and name != slug:
                out.setdefault(name, []).append(path)
        for paths in out.values():
            if len(paths) > 1:
                paths.sort()
        return out

    # -- questions about a few concepts: the store's lookup, else every card ------------------

    def card_at(self, path: str) -> TierCard | None:
        """The concept at ``path``, if it is a readable concept."""
        found = self._lookup("path", path)
        if found is not None:
            return found[0] if found else None
        if "cards" in self.__dict__:
            return self.cards.get(path)
        fact = self.catalog.facts.get(path)
        return TierCard(self.label, path, fact) if fact is not None else None

    def named(self, name: str) -> list[TierCard]:
        """The concepts whose slug or ``name`` is ``name``, in path order."""
        by_stem = self._lookup("stem", name)
        by_name = self._lookup("name", name) if by_stem is not None and name else []
        if by_stem is not None and by_name is not None:
            return sorted({c.path: c for c in by_stem + by_name}.values(), key=lambda c: c.path)
        return [self._card(path) for path in self.by_name.get(name, ())]

    def answering(self, okf_id: str) -> list[TierCard]:
        """The concepts that answer for ``okf_id``, by path (``needs-merge`` siblings do not)."""
        found = self._lookup("okf_id", okf_id)
        if found is not None:
            return [c for c in found if not is_needs_merge(c.path)]
        return self.by_okf_id.get(okf_id, [])

    def with_id(self, okf_id: str) -> list[TierCard]:
        """Every concept whose ``okf_id`` is ``okf_id`` (siblings too), by path."""
        found = self._lookup("okf_id", okf_id)
        return found if found is not None else [c for c in self.cards.values() if c.okf_id == okf_id]

    def titled(self, title: str) -> list[TierCard]:
        """The concepts whose title, ignoring case, is ``title`` (case-folded), by path."""
        found = self._lookup("title", title)
        return found if found is not None else [c for c in self.cards.values() if c.title.casefold() == title]

    def prefixed(self, stem: str) -> list[TierCard]:
        """The concepts whose slug or ``name`` starts with ``stem``, by path."""
        by_stem = self._lookup("stem", stem, prefix=True)
        by_name = self._lookup("name", stem, prefix=True) if by_stem is not None else None
        if by_stem is not None and by_name is not None:
            return sorted({c.path: c for c in by_stem + by_name}.values(), key=lambda c: c.path)
        return [c for c in self.cards.values() if c.slug.startswith(stem) or c.card.name.startswith(stem)]

    def under(self, prefix: str) -> list[TierCard]:
        """The concepts whose path starts with ``prefix``, by path."""
        store = self._store
        found = self._ask(store.facts_under(CARDS.name, self.label, prefix)) if store else None
        return found if found is not None else [c for p, c in self.cards.items() if p.startswith(prefix)]

    def matching(self, terms: list[str]) -> list[Match]:
        """The concepts whose title or description, lower-cased, holds every one of ``terms``
        (lower-cased), by path, without their cards. The store's full-text index narrows to
        the concepts that hold trigrams covering each term (every third and the last: each
        trigram asked for costs a walk of the concepts that hold it), and each one it gives is
        checked as below."""
        store = self._store
        grams = dict.fromkeys(t[i:i + 3] for t in terms if len(t) > 2 for i in (*range(0, len(t) - 3, 3), len(t) - 3))
        if store is not None and grams:
            query = " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)
            rows = store.matching(self.label, query)
            if rows is not None:
                label = self.label
                return [Match(label, *row) for row in rows if all(t in row[2] for t in terms)]
            self._give_up()
        folded = self.folded
        paths: list[str] | dict[str, str] = folded
        for term in terms:  # one pass per word over what is left: the words narrow it fast
            paths = [path for path in paths if term in folded[path]]
        facts = self.catalog.facts
        return [_match(self.label, path, facts[path]) for path in sorted(paths)]

    def cards_at(self, paths: list[str]) -> dict[str, TierCard]:
        """The concepts at ``paths`` (the readable ones), by path: one question of the store."""
        store = self._store
        if store is not None:
            rows = store.rows(CARDS.name, self.label, self.tree, paths)
            found = self._ask([(path, row.value) for path, row in rows.items() if row.value is not None]
                              if rows is not None else None)
            if found is not None:
                return {c.path: c for c in found}
        return {path: c for path in paths if (c := self.card_at(path)) is not None}

    def linking(self, names: list[str]) -> list[TierCard]:
        """The concepts whose links may name one of ``names`` (or are percent-encoded): every
        concept, unless the store's links of this tree narrow them (by path)."""
        store = self._store
        if store is not None and self._links_at(store):
            needles = [json.dumps(n, ensure_ascii=False)[1:-1] for n in names] + ["%"]
            rows = store.rows(LINKS.name, self.label, self.tree, containing=needles)
            if rows is not None:
                return [c for path in sorted(rows) if rows[path].value and (c := self.card_at(path)) is not None]
        return list(self.cards.values())

    def _links_at(self, store: Store) -> bool:
        """The store's links describe this tree (a reader brings them there as the cards)."""
        tree = self.tree
        head = store.head(LINKS.name, self.label)
        return tree is not None and head is not None and (head[0] == tree or self._forward(store, LINKS, tree))

    def _card(self, path: str) -> TierCard:
        if "cards" in self.__dict__:
            return self.cards[path]
        return TierCard(self.label, path, self.catalog.facts[path])

    @cached_property
    def problems(self) -> dict[str, tuple[str, str]]:
        """Concept paths that cannot be read: path -> (blob OID, why), by path."""
        store = self._store
        found = store.problems(CARDS.name, self.label) if store is not None else None
        if found is not None:
            return {path: (oid, why or "") for path, oid, why in found}
        return dict(sorted(self.catalog.problems.items()))

    # -- links and files ------------------------------------------------------------------

    @cached_property
    def links(self) -> TierCatalog[LinkFacts]:
        """Where each concept links to (``LINKS``, cached by tree like the cards; read only by
        the verbs that follow links)."""
        found = _catalog(LINKS, self.repo, self.tier, self.commit, self.tree, None, silent, self._stores)
        if self._own:
            self._stores.save()
        return found

    @cached_property
    def compared(self) -> dict[str, tuple[str, str]]:
        """Each concept compared for near-duplicates: its blob OID and its keys, packed (doctor's
        facts, ``checks.doctor_kind``, kept by tree like the cards; read only by what compares
        concepts)."""
        from okfgit.knowledge import checks

        found = _catalog(checks.doctor_kind(self.tier), self.repo, self.tier, self.commit, self.tree, None, silent,
                         self._stores)
        if self._own:
            self._stores.save()
        return {path: (fact.oid, fact.similar) for path, fact in found.facts.items()
                if isinstance(fact, checks.Checked) and fact.similar is not None}

    def links_of(self, path: str) -> tuple[int, list[Link]]:
        """(lines before the body, the body's links) of the concept at ``path`` (none when unreadable)."""
        found: LinkFacts | None = None
        store = self._store
        if "links" not in self.__dict__ and store is not None and self._links_at(store):
            row = (store.rows(LINKS.name, self.label, self.tree, [path]) or {}).get(path)
            try:
                found = _links_from_json(json.loads(row.value)) if row is not None and row.value else None
            except (ValueError, TypeError):
                found = None
            if found is not None:
                return found.head, found.parsed()
        found = self.links.facts.get(path)
        return (found.head, found.parsed()) if found is not None else (0, [])

    @cached_property
    def entries(self) -> dict[str, Entry]:
        """Every blob of the tier's KB at the commit (a walk of the whole tree: only when needed)."""
        return self.repo.tree_entries(self.commit, self.tier.prefix) if self.repo and self.commit else {}

    def listing(self, folder: str) -> dict[str, Entry]:
        """The files and folders directly in ``folder`` of the tier's KB, by name."""
        tree = self.tree
        return self.repo.listing(tree, folder) if self.repo is not None and tree else {}

    def exists(self, path: str) -> bool:
        """``path`` names a file or a folder of the KB (``markdown.names_something``), asked of
        the tree: no walk of every file."""
        from okfgit.format.markdown import names_something

        def at(where: str) -> Entry | None:
            return self.repo.entry_at(self.commit, self.tier.repo_path_of(where)) if self.repo and where else None

        def is_blob(where: str) -> bool:
            found = at(where)
            return found is not None and found.is_blob

        def holds(folder: str) -> bool:
            found = at(folder.rstrip("/"))
            return found.is_tree if found is not None else not folder and self.tree is not None
        return names_something(path, is_blob, holds)

    def oid(self, path: str) -> str | None:
        """The blob OID at ``path``, found without walking the tree."""
        concept = self.card_at(path)
        if concept is not None:
            return concept.oid
        if path in self.problems:
            return self.problems[path][0]
        if self.repo is None or not path:
            return None
        found = self.repo.entry_at(self.commit, self.tier.repo_path_of(path))
        return found.oid if found is not None and found.is_blob else None

    def blob(self, path: str) -> bytes:
        oid = self.oid(path)
        if oid is None or self.repo is None:
            raise UsageError(f"{self.label}:{path} does not exist")
        return self.repo.read_blob(oid)


def _match(label: str, path: str, card: Card) -> Match:
    return Match(label, path, card.okf_id, _fold(card), card.status, card.type, json.dumps(card.tags, ensure_ascii=False))


def _fold(card: Card) -> str:
    return f"{card.title}\n{card.description}".lower()


def _catalog(kind: catalog.Kind[F], repo: Repo | None, tier: Tier, commit: str | None, tree: str | None,
             blobs: dict[str, bytes] | None, progress: Progress, stores: Stores,
             index: bool = False) -> TierCatalog[F]:
    """The tier's ``kind`` catalog (its cards, or their links) at ``tree`` (default: the KB tree
    of ``commit``, which the store may already know): from the tier's store in ``stores``,
    updated by a tree diff, staged there for the run to save (with the lookup of the facts,
    when ``kind`` has one: kept in step, or written whole with ``index``)."""
    if repo is None or commit is None:
        return TierCatalog("")
    store = stores.of(repo.common_dir)
    start = catalog.load(kind, store, tier.label)
    if tree is None:
        tree = start.tree if start is not None and start.commit == commit else repo.tree_oid(commit, tier.prefix)
    if tree is None:
        return TierCatalog("")
    built = catalog.build_kind(kind, repo, tier, commit, tree, start, blobs, progress)
    catalog.remember(kind, store, tier.label, built, lookup=index)
    return built
