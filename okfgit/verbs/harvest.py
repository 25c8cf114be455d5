"""The ``okf-harvest`` block: a promotion's pull request, written and checked.

``promote --branch`` writes it into the pull request body (prose plus a fenced JSON
block naming each promoted concept's ``okf_id``, path and blob OID); ``review --pr-body``
reads it back and checks every claim against the branch's tree. One module owns the
format on both sides.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from okfgit import TOOL
from okfgit.context import Context
from okfgit.errors import UnwritableError, UsageError, ValidationError
from okfgit.git import clean_git_env
from okfgit.knowledge.snapshot import Snapshot
from okfgit.verbs.promote import Promotion

VERSION = 1
LABEL = "okf-harvest"
_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*okf-harvest[ \t]*$")


# -- writing ---------------------------------------------------------------------------


def block(p: Promotion) -> dict[str, object]:
    """What was promoted, from where, by what."""
    pp = p.plan
    return {
        "version": VERSION,
        "run": pp.source.run,
        "source": {"tier": pp.source.name, "run": pp.source.run, "commit": pp.source_head},
        "destination": {"tier": pp.destination.name, "branch": pp.branch, "commit": p.destination_oid},
        "concepts": [{"okf_id": i.okf_id, "path": i.path, "oid": i.oid, "from": i.source_path} for i in pp.items],
        "tool": TOOL,
    }


def pr_title(p: Promotion) -> str:
    return f"{LABEL}: {p.run or p.plan.source.label}"


def pr_body(p: Promotion) -> str:
    """Prose for a reviewer, then the fenced ``okf-harvest`` JSON block."""
    pp = p.plan
    origin = f"run `{pp.source.run}`" if pp.source.run else f"the {pp.source.label} tier"
    where = "the project knowledge base (`.okf/`)" if pp.destination.name == "project" else \
        f"the {pp.destination.label} knowledge base"
    count = "1 concept" if len(pp.items) == 1 else f"{len(pp.items)} concepts"
    lines = [f"Promotes {count} learned in {origin} into {where}.", "",
             "| concept | type | path | claim |", "|---|---|---|---|"]
    for i in pp.items:
        lines.append(f"| {_cell(i.title)} | {_cell(i.type)} | `{i.path}` | {_cell(i.description)} |")
    lines += [
        "",
        f"Each concept keeps its `okf_id`; only its `scope` changed (now `{pp.destination.name}`). "
        f"The {pp.source.label} copy was removed in commit `{p.source_oid[:12]}`, whose `Okf-Promoted-To` "
        "trailer points here; if this pull request is closed, reverting that commit brings it back.",
        "",
        "Check it with `okfgit review` before merging.",
        "",
        "```" + LABEL,
        json.dumps(block(p), indent=2, ensure_ascii=False),
        "```",
        "",
    ]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or " "


# -- opening the pull request ------------------------------------------------------------


@dataclass(frozen=True)
class PullRequest:
    """How the pull request was (or can be) opened: the commands, and gh's output when it ran."""

    commands: list[list[str]]
    ran: bool
    output: str = ""

    def shell(self) -> str:
        return "\n".join(shlex.join(c) for c in self.commands)


def pr_commands(p: Promotion, remote: str = "origin") -> list[list[str]]:
    """``git push`` of the branch, then ``gh pr create`` with the title, body and label."""
    pp = p.plan
    if pp.branch is None:
        raise UsageError("--open-pr needs --branch: the pull request is opened from that branch")
    repo = pp.destination.open()
    base = (repo.head_branch() or "").removeprefix("refs/heads/")
    create = ["gh", "pr", "create", "--head", pp.branch]
    if base:
        create += ["--base", base]
    create += ["--title", pr_title(p), "--body", pr_body(p), "--label", LABEL]
    return [["git", "push", "--set-upstream", remote, pp.branch], create]


def open_pr(ctx: Context, p: Promotion, remote: str = "origin") -> PullRequest:
    """Push the branch and run ``gh pr create``; without ``gh`` on PATH, only say what to run."""
    commands = pr_commands(p, remote)
    if shutil.which("gh", path=ctx.environ.get("PATH")) is None:
        return PullRequest(commands, ran=False)
    env = clean_git_env(ctx.environ)
    output = ""
    for command in commands:
        proc = subprocess.run(command, cwd=p.plan.destination.repo_path, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise UnwritableError(
                f"`{shlex.join(command[:3])} ...` failed ({proc.stderr.strip() or proc.returncode}); the branch "
                f"{p.plan.branch} is committed locally, run the rest yourself:\n" + PullRequest(commands, False).shell()
            )
        output = proc.stdout.strip()
    return PullRequest(commands, ran=True, output=output)


# -- checking a pull request body ----------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """What is wrong with a claim (``severity``: error or warning); review reports it as a finding."""

    severity: str
    rule: str
    path: str
    message: str


WHERE = "--pr-body"


def find_block(text: str) -> str | None:
    """The contents of the first fenced ``okf-harvest`` block, or None."""
    lines = text.replace("\r\n", "\n").split("\n")
    for i, line in enumerate(lines):
        opened = _FENCE.match(line.strip())
        if not opened:
            continue
        fence = opened.group(1)
        body: list[str] = []
        for inner in lines[i + 1:]:
            stripped = inner.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                break
            body.append(inner)
        return "\n".join(body)
    return None


def check(text: str, tree: Snapshot) -> tuple[dict[str, Any] | None, list[Problem]]:
    """Parse the block in ``text`` and check each claimed path, blob OID and okf_id against ``tree``."""
    raw = find_block(text)
    if raw is None:
        return None, [Problem("warning", "harvest-block", WHERE, f"has no ```{LABEL} block; nothing to check")]
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, [Problem("error", "harvest-block", WHERE, f"{LABEL} block is not valid JSON: {exc.msg} "
                              f"(line {exc.lineno}, column {exc.colno})")]
    if not isinstance(data, dict) or not isinstance(data.get("concepts"), list):
        return None, [Problem("error", "harvest-block", WHERE, f"{LABEL} block must be an object with a "
                              "concepts list")]
    out: list[Problem] = []
    if data.get("version") != VERSION:
        out.append(Problem("error", "harvest-block", WHERE, f"{LABEL} version {data.get('version')!r} is not "
                           f"{VERSION}"))
    for number, item in enumerate(data["concepts"], start=1):
        out += _check_claim(number, item, tree)
    return data, out


def _check_claim(number: int, item: Any, tree: Snapshot) -> list[Problem]:
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("okf_id", "path", "oid")):
        return [Problem("error", "harvest-block", WHERE, f"{LABEL} concept {number} needs okf_id, path and oid "
                        "strings")]
    path, oid = item["path"].lstrip("/"), item["oid"]
    entry = tree.entries.get(path)
    if entry is None:
        return [Problem("error", "harvest-mismatch", path, f"the {LABEL} block claims {path}, which is not in the "
                        "tree at the head")]
    out = []
    if entry.oid != oid:
        out.append(Problem("error", "harvest-mismatch", path, f"the {LABEL} block claims blob {oid}, but the tree "
                           f"at the head has {entry.oid}"))
    try:
        okf_id = tree.concept(path).okf_id
    except ValidationError:  # an unreadable file is doctor's finding, not this claim's
        return out
    if okf_id != item["okf_id"]:
        out.append(Problem("error", "harvest-mismatch", path, f"the {LABEL} block claims okf_id {item['okf_id']}, "
                           f"but the concept has {okf_id}"))
    return out
