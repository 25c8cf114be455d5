"""Review output: plain text for a terminal, markdown for a pull request comment, JSON.

The markdown ends with a fenced ``okf-review`` JSON block (verdict, findings, concepts),
so a bot or a person can read the verdict back from the posted comment.
"""

from __future__ import annotations

import json
from typing import Any

from okfgit.verbs.review import HUMAN, MERGE, REQUEST_CHANGES, CommitInfo, ConceptChange, FieldChange, Finding, Review

VERDICT_TEXT = {
    MERGE: "No finding blocks these knowledge changes; they can be merged.",
    REQUEST_CHANGES: "Some findings are errors; fix them before merging.",
    HUMAN: "These changes touch knowledge a person has reviewed; a person must approve them.",
}


def as_json(review: Review) -> str:
    return json.dumps(review.as_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


# -- text -------------------------------------------------------------------------------


def as_text(review: Review) -> str:
    lines = [f"okfgit review of .okf/ in {review.range} ({review.base[:12]}..{review.head[:12]}): "
             f"{review.verdict}", "", f"Concepts: {_counts(review)}"]
    for change in review.concepts:
        lines += _text_concept(change)
    if review.files:
        lines += ["", "Other files: " + ", ".join(f"{c} {p}" for c, p in review.files)]
    if review.harvest is not None:
        lines += ["", _harvest_line(review)]
    lines += ["", f"Findings ({len(review.findings)})" + (":" if review.findings else ": none")]
    for f in review.findings:
        lines.append(f"  {f.severity:<11}  {f.rule}  {_where(f)}: {f.message}")
    if review.preexisting:
        lines.append(f"  ({_plural(review.preexisting, 'finding')} already on the base, not counted)")
    lines += ["", f"Commits touching .okf/ ({len(review.commits)})" + (":" if review.commits else ": none")]
    for commit in review.commits:
        lines.append(f"  {commit.oid[:12]}  {_who(commit)}  {commit.subject}")
        for key, value in _okf_trailers(commit):
            lines.append(f"                {key}: {value}")
    lines += ["", f"Verdict: {review.verdict}. {VERDICT_TEXT[review.verdict]}"]
    return "\n".join(lines) + "\n"


def _text_concept(change: ConceptChange) -> list[str]:
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
    return out


def _field_text(item: FieldChange) -> str:
    if item.change == "added":
        return f"{item.key}: added {_value(item.new)}"
    if item.change == "removed":
        return f"{item.key}: removed (was {_value(item.old)})"
    return f"{item.key}: {_value(item.old)} -> {_value(item.new)}"


# -- markdown ----------------------------------------------------------------------------


def as_markdown(review: Review) -> str:
    out = [f"## okfgit review: {review.verdict}", "",
           f"Knowledge changes in `.okf/` from `{review.base[:12]}` to `{review.head[:12]}` ({_code(review.range)}): "
           f"{_counts(review)}.", "", f"**{VERDICT_TEXT[review.verdict]}**", ""]
    if review.harvest is not None:
        out += [_harvest_line(review), ""]
    out += _md_findings(review)
    out += ["### Concepts", ""] + (["No concept changed.", ""] if not review.concepts else [])
    for change in review.concepts:
        out += _md_concept(change)
    if review.files:
        out += ["Other files: " + ", ".join(f"{c} `{p}`" for c, p in review.files) + ".", ""]
    out += _md_commits(review)
    out += ["```okf-review", json.dumps(review.block(), indent=2, ensure_ascii=False, default=str), "```"]
    return "\n".join(out) + "\n"


def _md_findings(review: Review) -> list[str]:
    out = ["### Findings", ""]
    if not review.findings:
        out.append("None.")
    else:
        out += ["| severity | rule | where | finding |", "|---|---|---|---|"]
        for f in review.findings:
            out.append(f"| {f.severity} | `{f.rule}` | {_code(_where(f))} | {_cell(f.message)} |")
    if review.preexisting:
        out += ["", f"{_plural(review.preexisting, 'finding')} already on the base branch, not counted here."]
    return out + [""]


def _md_concept(change: ConceptChange) -> list[str]:
    where = f"{_code(change.old_path or '')} → {_code(change.path)}" if change.old_path else _code(change.path)
    head = f"#### {change.change} {where}"
    out = [head, "", f"{change.type or '(no type)'}: {_cell(change.title)}"
           + (f" · okf_id `{change.okf_id}`" if change.okf_id else ""), ""]
    if change.description and change.change in ("added", "removed"):
        out += [f"> {_cell(change.description)}", ""]
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
        fence = _fence(change.body_diff)
        out += ["<details><summary>body diff</summary>", "", fence + "diff", change.body_diff, fence, "",
                "</details>", ""]
    return out


def _md_commits(review: Review) -> list[str]:
    out = ["### Commits", ""]
    if not review.commits:
        return out + ["No commit in the range touches `.okf/`.", ""]
    out += ["| commit | provenance | subject |", "|---|---|---|"]
    for commit in review.commits:
        notes = "<br>".join(_code(f"{k}: {v}") for k, v in _okf_trailers(commit))
        who = _who(commit) + (f"<br>{notes}" if notes else "")
        out.append(f"| `{commit.oid[:12]}` | {who} | {_cell(commit.subject)} |")
    return out + [""]


# -- shared -------------------------------------------------------------------------------


def _harvest_line(review: Review) -> str:
    harvest = review.harvest or {}
    listed = harvest.get("concepts")
    claims = listed if isinstance(listed, list) else []
    bad = sum(1 for f in review.findings if f.rule.startswith("harvest-"))
    run = harvest.get("run")
    origin = f" from run {run}" if isinstance(run, str) else ""
    verdict = "every claim matches the head tree" if not bad else f"{_plural(bad, 'problem')} (see findings)"
    return f"Pull request okf-harvest block{origin}: {_plural(len(claims), 'concept')} claimed; {verdict}."


def _counts(review: Review) -> str:
    counts = review.counts()
    return ", ".join(f"{n} {kind}" for kind, n in counts.items())


def _where(f: Finding) -> str:
    return f"{f.path} line {f.line}" if f.line else f.path


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


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code that survives backticks and table pipes in the text."""
    ticks = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{_cell(text)}{pad}{ticks}"


def _fence(text: str) -> str:
    longest = 0
    for line in text.split("\n"):
        stripped = line[1:].lstrip() if line[:1] in "+- " else line
        run = len(stripped) - len(stripped.lstrip("`"))
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
