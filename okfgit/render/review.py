"""Review output: plain text for a terminal, markdown for a pull request comment, JSON.

The markdown ends with a fenced ``okf-review`` JSON block (verdict, findings, concepts),
so a bot or a person can read the verdict back from the posted comment. It is bounded:
GitHub refuses a comment over 65,536 characters, so past ``LIMIT`` the per-concept detail
collapses into one line per concept, then into counts per folder followed by the lines that
fit; the block is always complete, valid JSON at the end (what it had to leave out, it
counts). ``full=True`` is
the unbounded report, for a CI artifact.

Concept text is a contributor's words: in markdown it is escaped (HTML shown as text,
``@`` mentions neutralised) or fenced, never rendered as it stands.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any

from okfgit.format.findings import ERROR
from okfgit.format.markdown import fence_for
from okfgit.format.words import plural
from okfgit.verbs.review import (AMEND, APPROVED, CLOSE, HUMAN, MERGE, REQUEST_CHANGES, CommitInfo, ConceptChange,
                                 FieldChange, Review)

# GitHub's comment limit is 65,536 characters; keep a margin for what CI adds around it.
LIMIT = 60_000
BLOCK_BUDGET = 24_000  # at most this much of LIMIT goes to the okf-review block
DETAIL_CAP = 4_000  # one concept's diff or content, in the detailed comment
TEXT_CAP = 300  # one title, description or message in the shortened comment

VERDICT_TEXT = {
    MERGE: "No finding blocks these knowledge changes; they can be merged.",
    REQUEST_CHANGES: "Some findings are errors; fix them before merging.",
    HUMAN: "These changes need a person's approval (an approving review of the pull request, passed to "
           "`okfgit review --approved-by human:<id>`).",
    AMEND: "The maintainer amends these changes before merging: this head is not merged as it stands; the amended "
           "head gets a review of its own.",
    CLOSE: "The maintainer closes this pull request: its knowledge changes are not merged.",
}


def as_json(review: Review) -> str:
    return json.dumps(review.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"


# -- text -------------------------------------------------------------------------------


def as_text(review: Review, verbose: bool = False) -> str:
    lines = [f"okfgit review of .okf/ in {review.range} ({review.base[:12]}..{review.head[:12]}): "
             f"{review.verdict}", "", f"Concepts: {_counts(review)}"]
    for change in review.concepts:
        lines += _text_concept(change, verbose)
    if review.files:
        lines += ["", "Other files: " + ", ".join(f"{c} {p}" for c, p in review.files)]
    if review.harvest is not None:
        lines += ["", _harvest_line(review)]
    lines += ["", f"Findings ({len(review.findings)})" + (":" if review.findings else ": none")]
    for f in review.findings:
        lines.append(f"  {f.text()}")
    if review.preexisting:
        lines.append(f"  ({plural(review.preexisting, 'finding')} already on the base, not counted)")
    lines += ["", f"Commits touching .okf/ ({len(review.commits)})" + (":" if review.commits else ": none")]
    for commit in review.commits:
        lines.append(f"  {commit.oid[:12]}  {_who(commit)}  {commit.subject}")
        for key, value in _okf_trailers(commit):
            lines.append(f"                {key}: {value}")
    lines += ["", f"Verdict: {review.verdict}. {_verdict_text(review)}"]
    return "\n".join(lines) + "\n"


def _text_concept(change: ConceptChange, verbose: bool) -> list[str]:
    where = f"{change.old_path} -> {change.path}" if change.old_path else change.path
    out = [f"  {change.change:<9} {where}  {change.type or '(no type)'}: {change.title}"]
    if change.description and change.change in ("added", "removed"):
        out.append(f"      {change.description}")
    if change.change == "renamed" and not change.fields and not change.body_diff:
        out[-1] += " (content unchanged)"
    for item in change.fields:
        out.append(f"      {_field_text(item)}")
    if change.body_diff:
        out.append("      body:")
        out += [f"        {line}" for line in change.body_diff.split("\n")]
    if verbose and change.change == "added" and change.body is not None:
        out.append("      content:")
        out += [f"        {line}" for line in change.body.strip("\n").split("\n")]
    if change.linked_from:
        out.append(f"      linked from: {', '.join(change.linked_from)}")
    return out


def _field_text(item: FieldChange) -> str:
    if item.change == "added":
        return f"{item.key}: added {_value(item.new)}"
    if item.change == "removed":
        return f"{item.key}: removed (was {_value(item.old)})"
    return f"{item.key}: {_value(item.old)} -> {_value(item.new)}"


# -- markdown ----------------------------------------------------------------------------

# How much the markdown shows, most first: each concept in detail, each concept on one line,
# counts per folder (with as many lines as still fit). The richest that fits LIMIT is used.
DETAIL, LINES, FOLDERS = "detail", "lines", "folders"
LINE_TEXT = 160  # a title or description on one concept's line


def as_markdown(review: Review, full: bool = False) -> str:
    """The pull request comment: under ``LIMIT`` characters unless ``full``.

    The ``okf-review`` block comes last and is always complete JSON; it takes the room the
    prose leaves (at most ``BLOCK_BUDGET``), so it never crowds out what a person reads."""
    if full:
        return _markdown(review, DETAIL, full=True) + block(review, None)
    floor = len(block(review, 0))  # the block with its lists emptied: what it needs at least
    for level in (DETAIL, LINES):
        prose = _markdown(review, level)
        if len(prose) + floor <= LIMIT:
            return prose + block(review, min(BLOCK_BUDGET, LIMIT - len(prose)))
    prose = _markdown(review, FOLDERS, room=LIMIT - floor)
    return prose + block(review, min(BLOCK_BUDGET, LIMIT - len(prose)))


def block(review: Review, budget: int | None) -> str:
    """The fenced ``okf-review`` block, one list item per line; past ``budget`` characters its
    lists are cut (findings first: they decide the verdict) and the cut counted in ``omitted``."""
    data = review.block()
    text = _fenced_block(data)
    if budget is None or len(text) <= budget:
        return text
    findings, concepts = data["findings"], data["concepts"]

    def cut(n_findings: int, n_concepts: int) -> str:
        data["findings"], data["concepts"] = findings[:n_findings], concepts[:n_concepts]
        data["omitted"] = {"findings": len(findings) - n_findings, "concepts": len(concepts) - n_concepts}
        return _fenced_block(data)

    keep_f = _most(len(findings), lambda n: len(cut(n, 0)) <= budget)
    keep_c = _most(len(concepts), lambda n: len(cut(keep_f, n)) <= budget)
    return cut(keep_f, keep_c)


def _fenced_block(data: dict[str, Any]) -> str:
    """Compact JSON that still reads: one key per line, one list item per line."""
    lines = []
    for key, value in data.items():
        if isinstance(value, list) and value:
            items = ",\n".join("    " + _compact(v) for v in value)
            lines.append(f'  {json.dumps(key)}: [\n{items}\n  ]')
        else:
            lines.append(f"  {json.dumps(key)}: {_compact(value)}")
    return "```okf-review\n{\n" + ",\n".join(lines) + "\n}\n```\n"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(", ", ": "))


def _most(total: int, fits: Callable[[int], bool]) -> int:
    """The largest n in 0..total with fits(n) (fits is monotonic)."""
    low, high = 0, total
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def _markdown(review: Review, level: str, full: bool = False, room: int | None = None) -> str:
    """The prose of the comment at ``level``; at ``FOLDERS``, as many concept lines as fit
    ``room`` characters follow the counts per folder."""
    out = [f"## okfgit review: {review.verdict}", "",
           f"Knowledge changes in `.okf/` from `{review.base[:12]}` to `{review.head[:12]}` ({_code(review.range)}): "
           f"{_counts(review)}.", "", f"**{_verdict_text(review)}**", ""]
    if level != DETAIL:
        out += ["> This comment is shortened to stay within GitHub's size limit"
                + (" (one line per concept)." if level == LINES
                   else " (counts per folder, then the concepts that fit).")
                + " Run `okfgit review --full` (or open the review report artifact) for every concept's detail.", ""]
    if review.approved_by:
        out += [f"Approved by {', '.join(_text(a) for a in review.approved_by)} ({_text(review.approval_note)}).", ""]
    if review.harvest is not None:
        out += [_text(_harvest_line(review)), ""]
    out += _md_findings(review, None if level == DETAIL else (50 if level == LINES else 20))
    tail: list[str] = []
    if review.files:
        shown = review.files if level == DETAIL else review.files[:20]
        more = len(review.files) - len(shown)
        tail += ["Other files: " + ", ".join(f"{c} {_code(p)}" for c, p in shown)
                 + (f", and {more} more" if more else "") + ".", ""]
    tail += _md_commits(review, None if level == DETAIL else 30, trailers=None if level == DETAIL else 4)
    out += ["### Concepts", ""] + (["No concept changed.", ""] if not review.concepts else [])
    if review.concepts:
        if level == DETAIL:
            for change in review.concepts:
                out += _md_concept(change, None if full else DETAIL_CAP)
        elif level == LINES:
            marks = _marks(review)
            out += [_md_line(c, marks) for c in review.concepts] + [""]
        else:
            out += _md_folders(review.concepts, 40)
            used = len("\n".join(out + tail)) + 1
            out += _md_some_lines(review, (room or LIMIT) - used)
    return "\n".join(out + tail) + "\n"


def _md_some_lines(review: Review, room: int) -> list[str]:
    """As many concept lines as fit ``room`` characters, and how to see the rest."""
    marks = _marks(review)
    total = len(review.concepts)
    rest_note = ("… and {n} more concepts: `okfgit review --full` (or the review report artifact) lists every one, "
                 "`okfgit review --format json` too.")
    header = "{n} of {total} concepts, those with findings first:"
    # What surrounds the lines, at its longest: the header, the note, and the line ends of the
    # five lines they take (the header, a blank line, a blank line, the note, a blank line).
    room -= len(header.format(n=total, total=total)) + len(rest_note.format(n=total)) + 5
    lines: list[str] = []
    # What needs a decision first: concepts with errors, then with needs-human findings, then warnings.
    # (Each file's best rank found once: asking every finding for every concept took seconds at
    # a thousand concepts.)
    rank = {ERROR: 0, HUMAN: 1}
    best: dict[str, int] = {}
    for f in review.findings:
        best[f.file] = min(best.get(f.file, 3), rank.get(f.severity, 2))
    first = sorted(review.concepts, key=lambda c: min(
        best.get(c.path, 3), 3 if c.old_path is None else best.get(c.old_path, 3)))
    for change in first:
        line = _md_line(change, marks)
        if len(line) + 1 > room:
            break
        lines.append(line)
        room -= len(line) + 1
    out = [header.format(n=len(lines), total=total), ""] if lines else []
    out += lines
    if len(lines) < total:
        out += ["", rest_note.format(n=total - len(lines))]
    return out + [""]


def _marks(review: Review) -> dict[str, list[str]]:
    """Each concept path's findings, as ``severity: code`` marks (each once, in the findings' order)."""
    out: dict[str, list[str]] = {}
    for f in review.findings:
        mark = f"{f.severity}: {f.code}"
        found = out.setdefault(f.file, [])
        if mark not in found:
            found.append(mark)
    return out


def _md_line(c: ConceptChange, marks: dict[str, list[str]]) -> str:
    """One concept on one line: change, path, type, title, description, its findings' marks."""
    where = f"{_code(c.old_path)} → {_code(c.path)}" if c.old_path else _code(c.path)
    kind = _text(_short(c.type or "(no type)", 60))
    text = f"- {c.change} {where} · {kind}: **{_text(_short(c.title, LINE_TEXT))}**"
    if c.description and c.description != c.title:
        text += f" — {_text(_short(c.description, LINE_TEXT))}"
    found = marks.get(c.path, []) + [m for m in marks.get(c.old_path or "", []) if c.old_path]
    if found:
        text += " · " + ", ".join(f"`{m}`" for m in found)
    return text


def _md_findings(review: Review, cap: int | None) -> list[str]:
    out = ["### Findings", ""]
    if not review.findings:
        out.append("None.")
    else:
        shown = review.findings if cap is None else review.findings[:cap]
        out += ["| severity | code | where | finding |", "|---|---|---|---|"]
        for f in shown:
            message = _text(f.message if cap is None else _short(f.message))
            out.append(f"| {f.severity} | `{f.code}` | {_code(f.where())} | {message} |")
        if len(shown) < len(review.findings):
            out += ["", f"… and {len(review.findings) - len(shown)} more findings (all of them are in the "
                    "`okf-review` block below or in the full report)."]
    if review.preexisting:
        out += ["", f"{plural(review.preexisting, 'finding')} already on the base branch, not counted here."]
    return out + [""]


def _md_concept(change: ConceptChange, cap: int | None) -> list[str]:
    where = f"{_code(change.old_path or '')} → {_code(change.path)}" if change.old_path else _code(change.path)
    out = [f"#### {change.change} {where}", "", f"{_text(change.type or '(no type)')}: {_text(change.title)}"
           + (f" · okf_id `{change.okf_id}`" if change.okf_id else ""), ""]
    if change.description and change.change in ("added", "removed"):
        out += [f"> {_text(change.description)}", ""]
    if change.change == "renamed" and not change.fields and not change.body_diff:
        out += ["Content unchanged.", ""]
    if change.fields:
        out += ["| field | before | after |", "|---|---|---|"]
        for item in change.fields:
            before = "" if item.change == "added" else _code(_value(item.old))
            after = "" if item.change == "removed" else _code(_value(item.new))
            out.append(f"| `{item.key}` | {before} | {after} |")
        out.append("")
    if change.body_diff:
        out += _details("body diff", "diff", change.body_diff, cap)
    if change.change == "added" and change.body is not None and change.body.strip():
        out += _details("content", "markdown", change.body.strip("\n"), cap)
    if change.linked_from:
        shown = change.linked_from[:10]
        more = len(change.linked_from) - len(shown)
        out += ["Linked from: " + ", ".join(_code(p) for p in shown) + (f" and {more} more" if more else "") + ".",
                ""]
    return out


def _details(summary: str, lang: str, text: str, cap: int | None) -> list[str]:
    """A collapsed, fenced block (the fence outlasts any backtick run in ``text``), cut at ``cap``."""
    note = ""
    if cap is not None and len(text) > cap:
        kept = text[:cap]
        kept = kept[: kept.rfind("\n")] if "\n" in kept else kept
        note = f"… {len(text) - len(kept)} more characters in the full report."
        text = kept
    fence = fence_for(text)
    return ([f"<details><summary>{summary}</summary>", "", fence + lang, text, fence, ""]
            + ([note, ""] if note else []) + ["</details>", ""])


def _md_folders(changes: list[ConceptChange], cap: int | None) -> list[str]:
    kinds = ("added", "modified", "removed", "renamed")
    by_folder: dict[str, dict[str, int]] = {}
    for c in changes:
        folder = c.path.rsplit("/", 1)[0] + "/" if "/" in c.path else "(root)"
        by_folder.setdefault(folder, dict.fromkeys(kinds, 0))[c.change] += 1
    folders = sorted(by_folder)
    shown = folders if cap is None else folders[:cap]
    out = ["| folder | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    for folder in shown:
        out.append(f"| {_code(folder)} | " + " | ".join(str(by_folder[folder][k]) for k in kinds) + " |")
    if len(shown) < len(folders):
        out += ["", f"… and {len(folders) - len(shown)} more folders."]
    return out + [""]


def _md_commits(review: Review, cap: int | None, trailers: int | None = None) -> list[str]:
    out = ["### Commits", ""]
    if not review.commits:
        return out + ["No commit in the range touches `.okf/`.", ""]
    shown = review.commits if cap is None else review.commits[:cap]
    if shown:
        out += ["| commit | provenance | subject |", "|---|---|---|"]
    for commit in shown:
        found = _okf_trailers(commit)
        if trailers is not None and len(found) > trailers:
            found = found[:trailers] + [("…", f"{len(found) - trailers} more trailers")]
        notes = "<br>".join(_code(f"{k}: {v}") for k, v in found)
        who = _text(_who(commit)) + (f"<br>{notes}" if notes else "")
        out.append(f"| `{commit.oid[:12]}` | {who} | {_text(_short(commit.subject))} |")
    if len(shown) < len(review.commits):
        more = len(review.commits) - len(shown)
        out += ["", f"{plural(more, 'more commit')} {'touches' if more == 1 else 'touch'} `.okf/`."]
    return out + [""]


# -- shared -------------------------------------------------------------------------------


def _verdict_text(review: Review) -> str:
    if review.outcome is not None:
        return f"{VERDICT_TEXT[review.outcome]} (The checks alone say {review.checked}.)"
    if review.verdict == MERGE and any(f.severity == APPROVED for f in review.findings):
        return (f"A person approved what needed approval ({', '.join(review.approved_by)}; {review.approval_note}) "
                "and nothing else blocks "
                "these knowledge changes; they can be merged.")
    return VERDICT_TEXT[review.verdict]


def _harvest_line(review: Review) -> str:
    harvest = review.harvest or {}
    listed = harvest.get("concepts")
    claims = listed if isinstance(listed, list) else []
    bad = sum(1 for f in review.findings if f.code.startswith("harvest-"))
    run = harvest.get("run")
    origin = f" from run {run}" if isinstance(run, str) else ""
    verdict = "every claim matches the head tree" if not bad else f"{plural(bad, 'problem')} (see findings)"
    return f"Pull request okf-harvest block{origin}: {plural(len(claims), 'concept')} claimed; {verdict}."


def _counts(review: Review) -> str:
    counts = review.counts()
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def _who(commit: CommitInfo) -> str:
    if commit.operation:
        return f"okfgit {commit.operation}"
    return f"a person's commit ({commit.author})"


# Trailers every okfgit commit has say nothing about where the change came from.
_ROUTINE = ("okf-operation", "okf-tool")


def _okf_trailers(commit: CommitInfo) -> list[tuple[str, str]]:
    return [(k, v) for k, v in commit.trailers if k.lower().startswith("okf-") and k.lower() not in _ROUTINE]


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _short(text: str, cap: int = TEXT_CAP) -> str:
    return text if len(text) <= cap else text[: cap - 1] + "…"


# An @ that GitHub would read as a mention (a user or org/team): @name, not mail@example.com.
_MENTION = re.compile(r"(?<![\w.+-])@(?=[A-Za-z0-9])")


def _text(text: str) -> str:
    """Someone's words as markdown text: HTML shown as text, mentions that ping nobody, one table cell."""
    escaped = html.escape(text, quote=False)
    escaped = _MENTION.sub("@&#8203;", escaped)
    return escaped.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code that survives backticks and table pipes in the text (code shows HTML and @ as text)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text.replace('|', chr(92) + '|').replace(chr(10), ' ')}{pad}{ticks}"

