"""The ``okf-harvest`` block: its format, and a pull request body's block checked.

``promote --branch`` writes it into the pull request body (prose plus a fenced JSON
block naming each promoted concept's ``okf_id``, path and blob OID; ``verbs/promote``);
``review --pr-body`` reads it back and checks every claim against the branch's tree.
The names and the version of the format are here, for both sides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from okfgit.format import markdown, trailers
from okfgit.format.findings import ERROR, WARNING, Finding
from okfgit.errors import ValidationError
from okfgit.knowledge.snapshot import Snapshot

VERSION = 2  # 2: input, tasks and harvester (the operations design's provenance)
READS = (1, 2)  # the versions review accepts: a block an earlier okfgit wrote still checks
LABEL = "okf-harvest"
CONTINUED = "okf-harvest-continued"  # the fence of a block's continuation, in a pull request comment
# GitHub refuses a pull request body or comment over 65,536 characters; keep a margin.
BODY_LIMIT = 60_000


# -- the work a harvest came from -------------------------------------------------------------

# Where a run's task text and notes name the work they serve: GitHub issue or pull request
# references (#12, owner/repo#12, GH-12) and links. Nothing else is guessed at: a word such as
# UTF-8 or SHA-1 looks like a ticket key and is not one.
_ISSUE = re.compile(r"(?<![\w/&#])((?:[A-Za-z0-9][\w.-]*/[\w.-]+)?#\d+|GH-\d+)\b")
_URL = re.compile(r"https?://[^\s<>()\[\]`'\"]+[^\s<>()\[\]`'\".,;:!?]")
MAX_TASK_REFS = 50


def task_refs(texts: Iterable[str]) -> list[str]:
    """The issue references and links in ``texts``, each once, in the order found (at most
    ``MAX_TASK_REFS``): what a harvest block's ``tasks.refs`` lists."""
    out: list[str] = []
    for text in texts:
        for found in sorted([*_ISSUE.finditer(text), *_URL.finditer(text)], key=lambda m: m.start()):
            ref = found.group(0)
            if ref not in out:
                out.append(ref)
    return out[:MAX_TASK_REFS]


def provider_of(refs: Sequence[str]) -> str | None:
    """Who tracks the referenced work: ``github`` for issue references and github.com links,
    else the host of the links (``mixed`` when they disagree); None without a reference."""
    found = []
    for ref in refs:
        host = ref.split("://", 1)[1].split("/", 1)[0].lower() if "://" in ref else "github.com"
        name = "github" if host in ("github.com", "www.github.com") else host
        if name not in found:
            found.append(name)
    return None if not found else found[0] if len(found) == 1 else "mixed"


# -- checking a pull request body ----------------------------------------------------------


WHERE = "--pr-body"


def find_blocks(text: str, info: str = LABEL) -> list[str]:
    """The contents of every fenced block whose info string is ``info`` (``okf-harvest`` by
    default), in order, as CommonMark reads the fences (``markdown.walk``)."""
    return [block.content for block in markdown.fenced_blocks(text) if block.info == info]


def check(text: str, tree: Snapshot, changed: set[str] | None = None,
          commits: Mapping[str, Sequence[tuple[str, str]]] | None = None,
          head_branch: str | None = None) -> tuple[dict[str, Any] | None, list[Finding]]:
    """Parse the one block in ``text`` and check it against the pull request.

    Each claimed path, blob OID and okf_id against ``tree`` (the head); with ``changed``
    (the concept paths the pull request adds, modifies or renames) every one of them must be
    claimed; with ``commits`` (those of ``BASE..HEAD`` touching the tier, with their
    trailers) ``destination.commit`` must be one of them, an okfgit promotion whose
    ``Okf-Promoted-From`` trailers name ``source.commit``; with ``head_branch`` (the pull
    request's branch) ``destination.branch`` must name it.
    """
    blocks = find_blocks(text)
    if not blocks:
        return None, [Finding("harvest-block", WARNING, WHERE, f"has no ```{LABEL} block; nothing to check")]
    out: list[Finding] = []
    if len(blocks) > 1:
        out.append(Finding("harvest-block", ERROR, WHERE, f"has {len(blocks)} {LABEL} blocks; a pull request "
                           "carries one (only the first is read)"))
    try:
        data = json.loads(blocks[0])
    except json.JSONDecodeError as exc:
        return None, out + [Finding("harvest-block", ERROR, WHERE, f"{LABEL} block is not valid JSON: {exc.msg} "
                                    f"(line {exc.lineno}, column {exc.colno})")]
    if not isinstance(data, dict) or not isinstance(data.get("concepts"), list):
        return None, out + [Finding("harvest-block", ERROR, WHERE, f"{LABEL} block must be an object with a "
                                    "concepts list")]
    if data.get("version") not in READS:
        out.append(Finding("harvest-block", ERROR, WHERE, f"{LABEL} version {data.get('version')!r} is not "
                           f"{' or '.join(map(str, READS))}"))
    out += _check_provenance(data)
    if "continued" in data:
        more, problems = _continuation(text, data)
        data = {**data, "concepts": data["concepts"] + more}
        out += problems
    for number, item in enumerate(data["concepts"], start=1):
        out += _check_claim(number, item, tree)
    if changed is not None:
        claimed = {str(c.get("path", "")).lstrip("/") for c in data["concepts"] if isinstance(c, dict)}
        for path in sorted(changed - claimed):
            out.append(Finding("harvest-unclaimed", ERROR, path, f"the pull request adds or changes {path}, but "
                               f"its {LABEL} block does not claim it; every concept a harvest brings is claimed"))
    if commits is not None:
        out += _check_commits(data, commits)
    out += _check_branch(data, head_branch)
    return data, out


def _check_provenance(data: dict[str, Any]) -> list[Finding]:
    """``input``, ``tasks`` and ``harvester`` have their shapes when present (a version 1 block
    has none of them)."""
    bad = []
    given = data.get("input")
    if given is not None and not (isinstance(given, list) and all(
            isinstance(i, dict) and isinstance(i.get("kind"), str) for i in given)):
        bad.append("input must be a list of objects, each with a kind")
    tasks = data.get("tasks")
    if tasks is not None and not (isinstance(tasks, dict) and isinstance(tasks.get("refs"), list)
                                  and all(isinstance(r, str) for r in tasks["refs"])
                                  and (tasks.get("provider") is None or isinstance(tasks.get("provider"), str))):
        bad.append("tasks must be an object with a provider (a string or null) and a refs list of strings")
    who = data.get("harvester")
    if who is not None and not (isinstance(who, dict) and isinstance(who.get("instance"), str)
                                and (who.get("alias") is None or isinstance(who.get("alias"), str))):
        bad.append("harvester must be an object with an instance string and an alias (a string or null)")
    return [Finding("harvest-block", ERROR, WHERE, f"{LABEL} {why}") for why in bad]


def _continuation(text: str, data: dict[str, Any]) -> tuple[list[Any], list[Finding]]:
    """The claims of the ``okf-harvest-continued`` blocks (pull request comments) a block announces."""
    announced = data["continued"] if isinstance(data["continued"], dict) else {}
    parts: int = announced["parts"] if isinstance(announced.get("parts"), int) else 0
    commit = _part(data, "destination").get("commit")
    found: dict[int, list[Any]] = {}
    for raw in find_blocks(text, CONTINUED):
        try:
            part = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if (isinstance(part, dict) and part.get("destination_commit") == commit and isinstance(part.get("part"), int)
                and isinstance(part.get("concepts"), list)):
            found.setdefault(part["part"], part["concepts"])
    missing = [n for n in range(1, parts + 1) if n not in found]
    problems = []
    if missing:
        problems.append(Finding("harvest-block", ERROR, WHERE, f"the {LABEL} block continues in {parts} "
                                f"{CONTINUED} comments; part {', '.join(map(str, missing))} is missing (pass the "
                                "pull request's comments with its body)"))
    claims = [c for n in sorted(found) if n <= parts for c in found[n]]
    return claims, problems


def _check_commits(data: dict[str, Any], commits: Mapping[str, Sequence[tuple[str, str]]]) -> list[Finding]:
    """``destination.commit`` is a promotion in the pull request, made from ``source.commit``."""
    destination, source = _part(data, "destination"), _part(data, "source")
    claimed = destination.get("commit")
    if not isinstance(claimed, str) or claimed not in commits:
        return [Finding("harvest-mismatch", ERROR, WHERE, f"the {LABEL} block's destination.commit {claimed!r} "
                        "is not a commit of this pull request (BASE..HEAD) that changes the knowledge base")]
    found = commits[claimed]
    if trailers.values(list(found), "Okf-Operation") != ["promote"]:
        return [Finding("harvest-mismatch", ERROR, WHERE, f"the {LABEL} block's destination.commit {claimed[:12]} "
                        "is not an okfgit promotion (no Okf-Operation: promote trailer)")]
    origins = {v.rsplit("@", 1)[-1].split(":", 1)[0] for v in trailers.values(list(found), "Okf-Promoted-From")}
    if source.get("commit") not in origins:
        named = ", ".join(sorted(origins)) or "nothing"
        return [Finding("harvest-mismatch", ERROR, WHERE, f"the {LABEL} block's source.commit "
                        f"{source.get('commit')!r} is not the commit the promotion {claimed[:12]} came from "
                        f"(its Okf-Promoted-From trailers name {named})")]
    return []


def _part(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _check_branch(data: dict[str, Any], head_branch: str | None) -> list[Finding]:
    branch = _part(data, "destination").get("branch")
    if head_branch is None or branch is None or branch == head_branch:
        return []
    return [Finding("harvest-mismatch", ERROR, WHERE, f"the {LABEL} block's destination.branch {branch!r} is not "
                    f"this pull request's branch {head_branch!r}")]


def _check_claim(number: int, item: Any, tree: Snapshot) -> list[Finding]:
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("okf_id", "path", "oid")):
        return [Finding("harvest-block", ERROR, WHERE, f"{LABEL} concept {number} needs okf_id, path and oid "
                        "strings")]
    path, oid = item["path"].lstrip("/"), item["oid"]
    entry = tree.entries.get(path)
    if entry is None:
        return [Finding("harvest-mismatch", ERROR, path, f"the {LABEL} block claims {path}, which is not in the "
                        "tree at the head")]
    out = []
    if entry.oid != oid:
        out.append(Finding("harvest-mismatch", ERROR, path, f"the {LABEL} block claims blob {oid}, but the tree "
                           f"at the head has {entry.oid}"))
    try:
        okf_id = tree.concept(path).okf_id
    except ValidationError:  # an unreadable file is doctor's finding, not this claim's
        return out
    if okf_id != item["okf_id"]:
        out.append(Finding("harvest-mismatch", ERROR, path, f"the {LABEL} block claims okf_id {item['okf_id']}, "
                           f"but the concept has {okf_id}"))
    return out
