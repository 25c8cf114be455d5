"""An agent's memory file as knowledge: Claude Code's shapes unfolded into one flat mapping.

Claude Code 2.1.332 rewrites the frontmatter of every ``.md`` file it writes or edits in
its memory folder (``stampNewMemoryContent``): ``name`` kebab-cased, every other
top-level key folded under ``metadata:`` after ``node_type: memory`` (a key under
``metadata`` wins over the same key at the top level), plus ``metadata.originSessionId``,
``metadata.modified`` and, where its memory service tracks the file, ``claudeCodeItem``.
Older files keep ``type`` at the top level. So an okfgit concept Claude edited carries
``okf_id``, ``type`` and ``title`` under ``metadata``.

``unfold`` reads every shape the way Claude Code reads it (its ``Iu``), drops Claude's
bookkeeping (spec/okf-capture-sync.md §3: it is the session's, not the knowledge's), and
``edit`` writes the result back onto a concept's own bytes, touching only the keys that
changed. Bytes and mappings in, bytes and mappings out: no disk, no git.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from okfgit.format import concept as okf
from okfgit.format import names

# ``okf_source`` of a concept an agent wrote first, by the agent whose memory it came from.
CLAUDE = "claude-memory"
GEMINI = "gemini-cli"
SOURCES = (CLAUDE, GEMINI)

# Claude Code's bookkeeping in a memory file: never part of a concept.
STAMPS = ("node_type", "originSessionId", "modified", "claudeCodeItem", "typedTurn")
NAMESPACE = "metadata"  # where Claude Code folds every key but name and description
_OWN = ("name", "description", NAMESPACE)  # Claude Code's ``Ou``: the keys it never folds
_KEBAB = re.compile(r"^[a-z0-9_-]+$")
# Claude Code's subtrees of the memory folder that are not the agent's own memories (its
# ``EEr``): team stores (``team/<store>/``, synced from a server), logs, sessions, proposals.
RESERVED_FOLDERS = ("team", "logs", "sessions", "proposals")
INDEX_NAME = "MEMORY.md"


class Unfolded(NamedTuple):
    """A memory file's keys as one flat mapping, and what Claude Code added to them."""

    meta: dict[str, Any]  # the knowledge's keys: name, description, then every other, metadata's winning
    stamps: dict[str, Any]  # Claude Code's bookkeeping that was dropped (``STAMPS``)
    folded: bool  # the file keeps its keys under ``metadata:`` (Claude Code's shape)


def unfold(meta: Mapping[str, Any]) -> Unfolded:
    """``meta`` as Claude Code reads it: a ``metadata`` mapping's keys at the top level (and
    winning over a top-level key of the same name, as in Claude Code), its stamps removed,
    ``name`` and ``description`` kept only when they are non-empty strings (Claude Code's
    ``so``), keys whose value is null dropped (Claude Code drops them when it rewrites).

    A mapping without a ``metadata`` mapping comes back as it is (``folded`` False) but for
    the stamps at its top level: where Claude Code cannot rewrite a frontmatter faithfully (a
    ``#`` comment after a quoted value) it only dates it, with a top-level ``modified``."""
    inner = meta.get(NAMESPACE)
    if not isinstance(inner, Mapping):
        stamps = {k: meta[k] for k in STAMPS if k in meta}
        return Unfolded({k: v for k, v in meta.items() if k not in stamps}, stamps, False)
    out: dict[str, Any] = {}
    for key in ("name", "description"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            out[key] = value
    out.update((k, v) for k, v in meta.items() if k not in _OWN and v is not None)
    out.update((str(k), v) for k, v in inner.items() if v is not None)
    stamps = {k: out.pop(k) for k in STAMPS if k in out}
    return Unfolded(out, stamps, True)


def claude_name(name: str) -> str:
    """The ``name`` Claude Code writes back for ``name`` (its ``Fu``): kept when it is already
    lower-case kebab, else lower-cased with every run of other characters one ``-``."""
    if _KEBAB.match(name):
        return name
    return re.sub(r"^-+|-+$", "", re.sub(r"[^a-z0-9]+", "-", name.lower()))


def same_knowledge(mine: Mapping[str, Any], theirs: Mapping[str, Any], ignore: tuple[str, ...] = ()) -> bool:
    """Two unfolded mappings say the same (``ignore``'d keys aside): Claude Code's rewrite of
    ``name`` into kebab case and its dropping of null values are not changes."""
    a = _comparable(mine, ignore)
    b = _comparable(theirs, ignore)
    name_a, name_b = a.pop("name", None), b.pop("name", None)
    if name_a != name_b and not (isinstance(name_a, str) and isinstance(name_b, str)
                                 and claude_name(name_a) == claude_name(name_b)):
        return False
    return a == b


def _comparable(meta: Mapping[str, Any], ignore: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k not in ignore and k not in STAMPS and v is not None}


def same_body(mine: bytes, theirs: bytes) -> bool:
    """Bodies equal but for the blank lines before them (Claude Code writes exactly one)."""
    return mine.lstrip(b"\r\n") == theirs.lstrip(b"\r\n")


def edit(data: bytes, name: str, meta: Mapping[str, Any], body: bytes, *,
         keep: tuple[str, ...] = ()) -> tuple[bytes, okf.Parsed]:
    """The concept file ``data`` saying what the unfolded ``meta`` and ``body`` say, with
    every unchanged key's lines as they were (and the body's bytes, when only the blank lines
    before it differ): a key that
    changed is rewritten where it stands, a new one goes last, one the agent removed goes
    (``keep``'d keys and keys whose value was null stay: Claude Code drops nulls itself),
    and a ``metadata`` mapping an older okfgit committed is unfolded once. ``name`` stays as
    the concept spells it when the agent's is only Claude Code's kebab case of it.
    IntegrityError (``okf.set_keys``) when the bytes cannot be edited faithfully."""
    parsed = okf.split(data, name)
    current = parsed.meta
    updates: dict[str, Any] = {}
    for key, value in meta.items():
        if key == "name" and isinstance(current.get("name"), str) and isinstance(value, str) \
                and claude_name(current["name"]) == value:
            continue
        if current.get(key) != value:
            updates[key] = value
    remove = tuple(k for k, v in current.items()
                   if k not in meta and k not in keep and (v is not None or k == NAMESPACE))
    if not updates and not remove:
        out, check = data, parsed
    else:
        out, check = okf.set_keys_split(data, name, updates, remove, parsed=parsed)
    if same_body(check.body, body):
        return out, check  # the blank lines before it are not a change
    new = out[: len(out) - len(check.body)] + body  # the agent's body, byte for byte
    return new, okf.split(new, name)


def reserved(rel: str) -> bool:
    """Whether ``rel`` (a path relative to Claude Code's memory folder, ``/``-separated) lies
    where Claude Code keeps no memory of the agent's own (its ``j8``/``LHe``): a hidden part,
    a first folder ``logs``, ``sessions`` or ``proposals``, or a team store
    (``team/<store>/...``; a file directly in ``team/`` is an ordinary memory)."""
    parts = rel.split("/")
    if any(part.startswith(".") for part in parts):
        return True
    first = names.nfc(parts[0]).rstrip(". ").lower()
    if first == "team":
        return len(parts) >= 3
    return first in RESERVED_FOLDERS


def recall_candidate(rel: str) -> bool:
    """Whether Claude Code 2.1.332 lists ``rel`` among its recall candidates: a ``.md`` file,
    not named ``MEMORY.md`` at any depth, not in a reserved subtree (``reserved``)."""
    return rel.endswith(".md") and rel.rsplit("/", 1)[-1] != INDEX_NAME and not reserved(rel)


def origin_key(source: str, origin: str | None) -> str | None:
    """Which agent file ``okf_origin`` names, as one key: a Gemini CLI note's origin is
    ``gemini-cli:<origin>`` (its ``<short id>/<name>``), every other origin is a file in
    Claude Code's memory folder (the form okfgit always wrote), so the two never meet."""
    if not origin:
        return None
    return f"{GEMINI}:{origin}" if source == GEMINI else origin
