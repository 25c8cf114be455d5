"""OKF v0.2's trust and lifecycle families, read as the standard defines them (§5.2-§5.5).

The one place that reads ``status``, ``superseded_by``, ``stale_after`` and ``verified``:
doctor, review, the read verbs and projection all ask here, so a shape is never
understood one way by one verb and another way by the next.

- ``stale_after`` is an absolute ISO 8601 instant (``2026-09-23T00:00:00Z``, any explicit
  offset); a concept is stale when now >= it. A plain ``YYYY-MM-DD`` (the wording of an
  earlier revision of v0.2) is read as midnight UTC that day, and a datetime without an
  offset as UTC. Anything else is unreadable: never stale, and doctor says so.
- ``verified`` is a list of ``{by, at}`` events; a bare mapping is a one-element list
  (§11 MUST). An actor whose ``by`` starts with ``human:`` (compared case-insensitively)
  makes the concept human-reviewed (§5.3). Any other shape is a problem: doctor reports
  it as an error and review treats the concept as human-reviewed (fail closed), because
  a person may have meant to protect it.
- ``status`` is draft | stable | deprecated; absent means stable (§5.4).
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from okfgit.errors import OkfError
from okfgit.format import concept as okf

DRAFT = "draft"
STABLE = "stable"
DEPRECATED = "deprecated"
STATUSES = (DRAFT, STABLE, DEPRECATED)
HUMAN_PREFIX = "human:"
UNVERIFIED = "unverified"
MACHINE_CONFIRMED = "machine-confirmed"
HUMAN_REVIEWED = "human-reviewed"

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?$")


# -- instants ---------------------------------------------------------------------------


def parse_instant(value: Any) -> dt.datetime | None:
    """An OKF timestamp as an aware UTC datetime; None when it is not one.

    Accepts an ISO 8601 datetime (``Z`` or any explicit offset; none means UTC) and a
    plain ``YYYY-MM-DD`` date, read as midnight UTC.
    """
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if _DAY.match(text):
                moment = dt.datetime.combine(dt.date.fromisoformat(text), dt.time())
            elif _DATETIME.match(text):
                moment = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "Zz" else text)
            else:
                return None
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def format_instant(moment: dt.datetime) -> str:
    """``2026-09-23T00:00:00Z``: how okfgit shows an instant."""
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def instant_of(now: dt.date | dt.datetime | int | float) -> dt.datetime:
    """``now`` as an aware UTC instant: epoch seconds, a datetime, or a date (its midnight UTC)."""
    if isinstance(now, (int, float)):
        return dt.datetime.fromtimestamp(now, dt.timezone.utc)
    found = parse_instant(now)
    assert found is not None  # a date or datetime always parses
    return found


# -- lifecycle: status, superseded_by, stale_after -----------------------------------------


class Lifecycle(NamedTuple):
    """A concept's lifecycle as OKF defines it (§5.4, §5.5)."""

    status: str  # draft | stable | deprecated, or the value as written when it is none of them
    superseded_by: tuple[str, ...]
    stale_after: dt.datetime | None  # None when absent or unreadable
    stale_after_written: str | None  # the value as written (None when the key is absent)

    @property
    def deprecated(self) -> bool:
        return self.status == DEPRECATED

    @property
    def stale_after_invalid(self) -> bool:
        """``stale_after`` is present but is not an instant okfgit can read."""
        return self.stale_after_written is not None and self.stale_after is None

    def is_stale(self, now: dt.datetime) -> bool:
        """OKF §5.5: stale when now >= stale_after."""
        return self.stale_after is not None and now >= self.stale_after

    def stale_label(self) -> str | None:
        return format_instant(self.stale_after) if self.stale_after is not None else None


def lifecycle(meta: Mapping[str, Any]) -> Lifecycle:
    """Read ``status``, ``superseded_by`` and ``stale_after`` from a concept's frontmatter."""
    raw = meta.get("status")
    if raw is None and "stale_after" not in meta and "superseded_by" not in meta:
        return _STABLE  # most concepts: none of the three keys
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        status = STABLE
    else:
        text = " ".join(str(raw).split())
        status = text.lower() if text.lower() in STATUSES else text
    written = meta.get("stale_after")
    return Lifecycle(
        status=status,
        superseded_by=refs(meta.get("superseded_by")),
        stale_after=parse_instant(written) if written is not None else None,
        stale_after_written=None if written is None else str(written),
    )


_STABLE = Lifecycle(STABLE, (), None, None)


def refs(value: Any) -> tuple[str, ...]:
    """The concepts a ``supersedes``/``superseded_by`` value names (one, or a list)."""
    if isinstance(value, str):
        return (value.strip(),) if value.strip() else ()
    if isinstance(value, list):
        return tuple(str(v).strip() for v in value if isinstance(v, (str, int)) and str(v).strip())
    return ()


# -- trust: verified ------------------------------------------------------------------------


class Verification(NamedTuple):
    """One ``verified`` event: an actor and when (as written)."""

    by: str
    at: str

    @property
    def human(self) -> bool:
        return is_human(self.by)


class Trust(NamedTuple):
    """A concept's ``verified`` events, and what is wrong with their shape (if anything)."""

    events: tuple[Verification, ...]
    problem: str | None = None  # a shape OKF does not define; fail closed

    @property
    def humans(self) -> tuple[str, ...]:
        """The ``human:`` actors who verified it."""
        return tuple(e.by for e in self.events if e.human)

    @property
    def human_reviewed(self) -> bool:
        """Human-reviewed (§5.3), or unreadable and so treated as such (fail closed)."""
        return bool(self.humans) or self.problem is not None

    @property
    def tier(self) -> str:
        """OKF §5.3's trust tier (an unreadable ``verified`` counts as human-reviewed)."""
        if self.human_reviewed:
            return HUMAN_REVIEWED
        return MACHINE_CONFIRMED if self.events else UNVERIFIED


def is_human(actor: Any) -> bool:
    """An actor in OKF §7's ``human:<id>`` form (the prefix compared case-insensitively)."""
    return isinstance(actor, str) and actor.strip().casefold().startswith(HUMAN_PREFIX)


_UNVERIFIED = Trust(())


def trust(meta: Mapping[str, Any]) -> Trust:
    """Read ``verified`` (§5.2): a list of ``{by, at}`` mappings, or one bare mapping."""
    if meta.get("verified") is None:
        return _UNVERIFIED
    value = meta["verified"]
    if isinstance(value, Mapping):
        entries: list[Any] = [value]
    elif isinstance(value, list):
        entries = value
    else:
        return Trust((), f"verified is {_kind(value)} ({_shown(value)}); OKF §5.2 defines a list of "
                         "{by, at} mappings, or one such mapping")
    events: list[Verification] = []
    problems: list[str] = []
    for number, entry in enumerate(entries, start=1):
        where = "verified" if isinstance(value, Mapping) else f"verified entry {number}"
        if not isinstance(entry, Mapping):
            problems.append(f"{where} is {_kind(entry)} ({_shown(entry)}), not a {{by, at}} mapping")
            continue
        by, at = entry.get("by"), entry.get("at")
        if not isinstance(by, str) or not by.strip():
            problems.append(f"{where} has no actor (by) as text")
            continue
        events.append(Verification(by.strip(), "" if at is None else str(at)))
        if at is not None and parse_instant(at) is None:
            problems.append(f"{where} has at {_shown(at)}, which is not an ISO 8601 datetime")
    return Trust(tuple(events), "; ".join(problems) if problems else None)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def ref_candidates(ref: str, source: str) -> list[str]:
    """The KB paths a ``supersedes``/``superseded_by`` value written in ``source`` may name,
    most likely first (an ``okf_id`` is matched by the caller).

    A path is tried from the tier root, then from the concept's folder; a bundle-absolute
    one (``/decisions/x.md``) also from each folder above the concept, since a bundle
    adopted into a subfolder keeps its frontmatter as written. ``.md`` may be left off.
    """
    ref = ref.strip()
    if not ref or "://" in ref:
        return []
    folders = source.split("/")[:-1]
    bases = [""]
    if ref.startswith("/"):
        bases += ["/".join(folders[:n]) for n in range(len(folders), 0, -1)]
    else:
        bases.insert(0, "/".join(folders))
    out: list[str] = []
    for base in bases:
        joined = posixpath.normpath(posixpath.join(base, ref.lstrip("/"))) if base else \
            posixpath.normpath(ref.lstrip("/"))
        if joined.startswith(".."):
            continue
        path = joined if joined.endswith(".md") else joined + ".md"
        if path not in out:
            out.append(path)
    return out


# -- protection: what no agent changes in place ---------------------------------------------

DECISION = "decision"


UNREADABLE_VERIFIER = "an unreadable verified entry"


def verifiers(meta: Mapping[str, Any]) -> list[str]:
    """Who makes the concept human-reviewed (§5.3): its ``human:`` verifiers, or, for a
    ``verified`` okfgit cannot read, ``UNREADABLE_VERIFIER`` (fail closed: kept as a person's);
    empty when no person verified it."""
    found = trust(meta)
    if found.humans:
        return list(found.humans)
    return [UNREADABLE_VERIFIER] if found.problem is not None else []


def is_decision(meta: Mapping[str, Any]) -> bool:
    """Of type Decision (any case): superseded, never rewritten in place."""
    kind = meta.get("type")
    return isinstance(kind, str) and kind.strip().casefold() == DECISION


def protected_by(meta: Mapping[str, Any]) -> str:
    """Why no agent may change this concept in place, as a phrase ("verified by human:alice",
    "a Decision", both joined by "and"); "" when an agent may.

    The one rule (spec/okf-capture-sync.md §4), which review's needs-human and Decision
    findings apply too: a concept that ``verifiers`` names a person for, or ``is_decision``.
    """
    reasons: list[str] = []
    people = verifiers(meta)
    if people == [UNREADABLE_VERIFIER]:
        reasons.append("carrying a verified entry okfgit cannot read (kept as a person's)")
    elif people:
        reasons.append(f"verified by {', '.join(people)}")
    if is_decision(meta):
        reasons.append("a Decision")
    return " and ".join(reasons)


def protected_in(data: bytes, path: str) -> str:
    """``protected_by`` of a concept's bytes ("" when they cannot be read: doctor names them)."""
    try:
        return protected_by(okf.split(data, path).meta)
    except OkfError:
        return ""

