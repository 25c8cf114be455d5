"""``cites``: the concepts a note bears on, and how (the operations design's citation of knowledge).

A note written with ``okfgit note --cites REF --relation R`` carries, in its frontmatter::

    cites:
    - {ref: 'project:decisions/use-postgres.md@1a2b3c4', okf_id: <uuid>, relation: contradicts}

``ref`` is the citation (``<tier>:<path>@<short blob oid>``) of the concept as it was when the
note was written; ``okf_id`` is what follows it across renames and tiers; ``relation`` is
``confirms``, ``refines`` or ``contradicts``. A bare mapping reads as a one-element list. One
reader for every verb: promote (a ``contradicts`` proposes a supersession; the harvest block
carries the citations), review (a ``contradicts`` that the pull request does not resolve needs a
person).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


RELATIONS = ("confirms", "refines", "contradicts")
CONTRADICTS = "contradicts"


@dataclass(frozen=True, slots=True)
class Cite:
    ref: str
    okf_id: str | None
    relation: str

    def to_json(self) -> dict[str, str | None]:
        return {"ref": self.ref, "okf_id": self.okf_id, "relation": self.relation}

    @property
    def path(self) -> str:
        """The KB path inside ``ref`` (``tier:path@oid``)."""
        return self.ref.split(":", 1)[-1].rsplit("@", 1)[0]


def read(meta: Mapping[str, Any]) -> tuple[Cite, ...]:
    """The citations in a concept's frontmatter; entries without a known relation are skipped."""
    value = meta.get("cites")
    entries = [value] if isinstance(value, Mapping) else value if isinstance(value, list) else []
    out = []
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        relation = str(entry.get("relation", "")).strip().lower()
        ref = entry.get("ref")
        okf_id = entry.get("okf_id")
        if relation in RELATIONS and (isinstance(ref, str) or isinstance(okf_id, str)):
            out.append(Cite(ref if isinstance(ref, str) else "", okf_id if isinstance(okf_id, str) else None,
                            relation))
    return tuple(out)


def check_relation(value: str) -> str:
    """``--relation``, any case; ValueError naming the choices otherwise."""
    relation = value.strip().lower()
    if relation not in RELATIONS:
        raise ValueError(f"--relation must be one of {', '.join(RELATIONS)}, not {value!r}")
    return relation
