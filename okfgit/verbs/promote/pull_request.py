"""A promotion's pull request: its title, its body with the ``okf-harvest`` block, and
opening it with ``git push`` and ``gh`` (the block's format and checks: ``flows/harvest``)."""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from okfgit import TOOL
from okfgit.context import Context
from okfgit.errors import IntegrityError, OkfError, UnwritableError, UsageError
from okfgit.flows.harvest import BODY_LIMIT, CONTINUED, LABEL, VERSION, provider_of, task_refs
from okfgit.local import pr_bodies
from okfgit.git import command
from okfgit.verbs.promote import Item, Promotion, PromotionPlan
from okfgit.format.words import plural


def block(p: Promotion) -> dict[str, object]:
    """What was promoted, from where, by what, for which work, by whom."""
    pp = p.plan
    instance, alias = pp.harvester
    return {
        "version": VERSION,
        "run": pp.source.run,
        "source": {"tier": pp.source.name, "run": pp.source.run, "commit": pp.source_head},
        "destination": {"tier": pp.destination.name, "branch": pp.branch, "commit": p.destination_oid},
        "input": inputs(pp),
        "tasks": tasks(pp),
        "harvester": {"instance": instance, "alias": alias},
        "concepts": [_claim(i) for i in pp.items],
        "tool": TOOL,
    }


def inputs(pp: PromotionPlan) -> list[dict[str, object]]:
    """What the harvest read: the run (or tier) at the commit promoted from, then each concept
    a promoted note cites (each once, with the first note citing it)."""
    where: dict[str, object] = ({"kind": "run", "run": pp.source.run} if pp.source.run
                                else {"kind": "tier", "tier": pp.source.label})
    out: list[dict[str, object]] = [{**where, "commit": pp.source_head}]
    seen: set[tuple[str, str | None]] = set()
    for item in pp.items:
        for cite in item.cites:
            if (cite.ref, cite.okf_id) in seen:
                continue
            seen.add((cite.ref, cite.okf_id))
            out.append({"kind": "citation", **cite.to_json(), "by": item.path})
    return out


def tasks(pp: PromotionPlan) -> dict[str, object]:
    """The work the harvest serves: issue references and links in the run's task text and in
    the promoted notes, and who tracks them (``harvest.task_refs``)."""
    refs = _task_refs(pp)
    return {"provider": provider_of(refs), "refs": refs}


def _task_refs(pp: PromotionPlan) -> list[str]:
    return task_refs([pp.task] + [i.data.decode("utf-8", errors="replace") for i in pp.items])


def _claim(item: Item) -> dict[str, object]:
    out: dict[str, object] = {"okf_id": item.okf_id, "path": item.path, "oid": item.oid, "from": item.source_path}
    if item.cites:
        out["cites"] = [c.to_json() for c in item.cites]
    return out


def pr_title(p: Promotion) -> str:
    return f"{LABEL}: {p.run or p.plan.source.label}"


def pr_body(p: Promotion) -> str:
    """Prose for a reviewer, then the fenced ``okf-harvest`` JSON block."""
    pp = p.plan
    origin = f"run `{pp.source.run}`" if pp.source.run else f"the {pp.source.label} tier"
    where = "the project knowledge base (`.okf/`)" if pp.destination.name == "project" else \
        f"the {pp.destination.label} knowledge base"
    count = plural(len(pp.items), "concept")
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
    ]
    work = _task_refs(pp)
    if work:
        lines += [f"For: {', '.join(_cell(r) for r in work)}.", ""]
    lines += [f"Harvested by {_cell(pp.harvester[0])}" + (f" ({_cell(pp.harvester[1])})" if pp.harvester[1] else "")
              + ".", ""]
    if pp.proposals:
        lines += ["**Contradictions to resolve** (a note says the project's knowledge is wrong):", ""]
        lines += [f"- {_cell(text)}" for text in pp.proposals]
        lines += [""]
    lines += [
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


def pr_parts(p: Promotion) -> list[str]:
    """What ``gh`` posts: the body, then the comments continuing its block, each under ``BODY_LIMIT``.

    A body that fits is ``pr_body`` itself. Otherwise the body lists the concepts by folder, its
    block (one claim per line) holds the claims that fit and ``"continued": {"parts": n,
    "concepts": m}``, and each of ``n`` comments holds a fenced ``okf-harvest-continued`` block
    ``{"version", "part", "parts", "destination_commit", "concepts"}`` with the next claims.
    """
    full = pr_body(p)
    if len(full) <= BODY_LIMIT:
        return [full]
    data = block(p)
    lines = [json.dumps(_claim(i), ensure_ascii=False, separators=(",", ":")) for i in p.plan.items]
    prose = _short_prose(p)
    room = BODY_LIMIT - len(prose) - len(_compact_block(LABEL, {**data, "continued": {"parts": 999, "concepts": 0}},
                                                         []))
    kept = _fill(lines, room)
    chunks: list[list[str]] = []
    rest = lines[kept:]
    while rest:
        taken = max(1, _fill(rest, BODY_LIMIT - 1_000))
        chunks.append(rest[:taken])
        rest = rest[taken:]
    data["continued"] = {"parts": len(chunks), "concepts": len(lines) - kept}
    out = [prose + _compact_block(LABEL, data, lines[:kept])]
    for number, chunk in enumerate(chunks, start=1):
        head = {"version": VERSION, "part": number, "parts": len(chunks), "destination_commit": p.destination_oid}
        out.append(f"{LABEL}, continued: part {number} of {len(chunks)} of this pull request's claims (too many "
                   "for its body; `okfgit review --pr-body` reads them with the body).\n\n"
                   + _compact_block(CONTINUED, head, chunk))
    return out


def _fill(lines: list[str], room: int) -> int:
    """How many of ``lines`` fit in ``room`` characters, one per line."""
    used = 0
    for count, line in enumerate(lines):
        used += len(line) + 2
        if used > room:
            return count
    return len(lines)


def _compact_block(fence: str, data: dict[str, Any], claims: list[str]) -> str:
    """A fenced JSON object whose ``concepts`` are ``claims``, one per line (valid JSON, compact)."""
    head = {k: v for k, v in data.items() if k != "concepts"}
    text = json.dumps(head, ensure_ascii=False)[:-1] + ', "concepts": [\n' + ",\n".join(claims) + "\n]}"
    return "```" + fence + "\n" + text + "\n```\n"


def _short_prose(p: Promotion) -> str:
    """The body's prose for a promotion too large to list concept by concept."""
    pp = p.plan
    origin = f"run `{pp.source.run}`" if pp.source.run else f"the {pp.source.label} tier"
    folders: dict[str, int] = {}
    for item in pp.items:
        folder = item.path.rsplit("/", 1)[0] + "/" if "/" in item.path else "(root)"
        folders[folder] = folders.get(folder, 0) + 1
    lines = [f"Promotes {plural(len(pp.items), 'concept')} learned in {origin} into the {pp.destination.label} knowledge "
             "base; too many to list here (see the Files tab), by folder:", "", "| folder | concepts |", "|---|---|"]
    lines += [f"| `{folder}` | {count} |" for folder, count in sorted(folders.items())[:100]]
    if len(folders) > 100:
        lines.append(f"| … {len(folders) - 100} more folders | |")
    lines += ["", f"The {pp.source.label} copy was removed in commit `{p.source_oid[:12]}`; reverting it brings them "
              "back if this pull request is closed."]
    if pp.proposals:
        lines += ["", f"**Contradictions to resolve**: {len(pp.proposals)} (see `okfgit review`)."]
    return "\n".join(lines + ["", "Check it with `okfgit review` before merging.", "", ""])


# -- opening the pull request ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PullRequest:
    """How the pull request was (or can be) opened: the commands, what ran, and what failed.

    ``error`` is set when a step failed after the commits were made: the command prints
    everything first (the commits, the title, the body) and then raises it (exit 3).
    """

    commands: list[list[str]]
    body_file: Path
    ran: bool
    output: str = ""
    pushed: bool = False
    labelled: bool = False
    notes: tuple[str, ...] = ()
    error: OkfError | None = None
    why_not: str = ""  # why nothing ran (no gh, no remote yet)

    def shell(self) -> str:
        return "\n".join(shlex.join(c) for c in self.commands)


def check_remote(pp: PromotionPlan, remote: str) -> None:
    """Before anything is committed: ``--open-pr`` pushes to ``remote``. A repository with other
    remotes but not that one is stopped (a mistyped ``--remote``, nothing written); one with no
    remote at all is promoted on its branch, and ``open_pr`` says what to run once it has one."""
    repo = pp.destination.open() if pp.destination.exists() else None
    remotes = repo.remote_names() if repo is not None else []
    if remotes and remote not in remotes:
        raise UsageError(f"--open-pr pushes to the remote {remote!r}, which {pp.destination.repo_path} does not "
                         f"have (it has: {', '.join(remotes)}); pass --remote, or add it first, e.g. "
                         f"`git remote add {remote} <url>` (nothing was written)")


def pr_commands(p: Promotion, body_file: Path, remote: str = "origin", label: bool = True) -> list[list[str]]:
    """``git push`` of the branch, ``gh label create`` and ``gh pr create --body-file``."""
    pp = p.plan
    if pp.branch is None:
        raise UsageError("--open-pr needs --branch: the pull request is opened from that branch")
    repo = pp.destination.open()
    base = (repo.head_branch() or "").removeprefix("refs/heads/")
    create = ["gh", "pr", "create", "--head", pp.branch]
    if base:
        create += ["--base", base]
    create += ["--title", pr_title(p), "--body-file", str(body_file)]
    if label:
        create += ["--label", LABEL]
    return [["git", "push", "--set-upstream", remote, pp.branch], LABEL_COMMAND, create]


# --force: create the label, or update it when it exists (so this never fails on a second run).
LABEL_COMMAND = ["gh", "label", "create", LABEL, "--force", "--color", "0E8A16",
                 "--description", "Knowledge promoted by okfgit"]


def open_pr(ctx: Context, p: Promotion, remote: str = "origin") -> PullRequest:
    """Keep the body under the git common dir, push the branch, make sure the label exists, then
    ``gh pr create --body-file``; without ``gh`` on PATH, only say what to run."""
    pp = p.plan
    assert pp.branch is not None
    repo = pp.destination.open()
    parts = pr_parts(p)
    if len(parts) > 1:
        pr_bodies.keep(repo.common_dir, pp.branch, pr_body(p), full=True)
    body_file = pr_bodies.keep(repo.common_dir, pp.branch, parts[0])
    comments = [["gh", "pr", "comment", pp.branch, "--body-file", str(pr_bodies.keep(repo.common_dir, pp.branch, text,
                                                                                     part=n))]
                for n, text in enumerate(parts[1:], start=1)]
    commands = pr_commands(p, body_file, remote) + comments
    if remote not in repo.remote_names():
        return PullRequest([["git", "remote", "add", remote, "<url>"], *commands], body_file, ran=False,
                           why_not=f"{pp.destination.repo_path} has no remote yet (add one, then push)")
    if shutil.which("gh", path=ctx.environ.get("PATH")) is None:
        return PullRequest(commands, body_file, ran=False, why_not="gh is not on PATH")
    push, label, create = commands[:3]
    where = f"{pp.destination.label} commit {p.destination_oid[:12]} on branch {pp.branch}"
    kept = f"The pull request body is kept in {body_file}."

    pushed, why = _run(ctx, p, push)
    if not pushed:
        return PullRequest(commands, body_file, ran=True, error=UnwritableError(
            f"`git push --set-upstream {remote} {pp.branch}` failed ({why}); nothing was pushed. Both commits "
            f"are made locally ({where}). {kept} To open the pull request, run in {pp.destination.repo_path}:\n"
            + "\n".join(shlex.join(c) for c in [push, label, create] + comments)))
    notes: list[str] = []
    labelled, _ = _run(ctx, p, label)
    if not labelled:
        create = pr_commands(p, body_file, remote, label=False)[2]
        notes.append(f"could not create the {LABEL} label (no permission?); opening the pull request without it")
    opened, output = _run(ctx, p, create)
    if not opened:
        return PullRequest(commands, body_file, ran=True, pushed=True, labelled=labelled, notes=tuple(notes),
                           error=UnwritableError(
            f"`gh pr create` failed ({output}). The branch {pp.branch} was pushed to {remote} ({where}); no pull "
            f"request was opened. {kept} To open it, run in {pp.destination.repo_path}:\n"
            + "\n".join(shlex.join(c) for c in [create] + comments)))
    for number, comment in enumerate(comments, start=1):
        posted, why = _run(ctx, p, comment)
        if not posted:
            return PullRequest(commands, body_file, ran=True, output=output, pushed=True, labelled=labelled,
                               notes=tuple(notes), error=UnwritableError(
                f"the pull request was opened ({output}), but part {number} of its {LABEL} claims could not be "
                f"posted ({why}); review reports the missing part until it is. Run in "
                f"{pp.destination.repo_path}:\n" + "\n".join(shlex.join(c) for c in comments[number - 1:])))
    return PullRequest(commands, body_file, ran=True, output=output, pushed=True, labelled=labelled,
                       notes=tuple(notes))


def _run(ctx: Context, p: Promotion, argv: list[str]) -> tuple[bool, str]:
    """Run ``argv`` in the destination repository: (succeeded, its output or why it failed)."""
    try:
        done = command.run(argv, ctx.environ, cwd=p.plan.destination.repo_path)
    except IntegrityError as exc:
        return False, str(exc)
    if done.code != 0:
        return False, done.err.strip() or done.out.strip() or f"exit status {done.code}"
    return True, done.out.strip()


def to_json(done: Promotion, pr: PullRequest | None) -> dict[str, object]:
    """A promotion as ``promote --json`` prints it: the commits, the concepts, the pull
    request text for a branch, and what ``--open-pr`` did."""
    pp = done.plan
    out: dict[str, object] = {
        "source": {"tier": pp.source.label, "head": pp.source_head, "commit": done.source_oid},
        "destination": {"tier": pp.destination.label, "branch": pp.branch, "commit": done.destination_oid},
        "concepts": [{"okf_id": i.okf_id, "from": i.source_path, "path": i.path, "oid": i.oid, "minted": i.minted}
                     for i in pp.items],
        "warnings": pp.warnings,
        "proposals": pp.proposals,
    }
    if pp.branch:
        out["pr"] = {"title": pr_title(done), "body": pr_body(done), "harvest": block(done)}
    if pr is not None:
        out["open_pr"] = {"ran": pr.ran, "commands": pr.commands, "output": pr.output, "body_file": str(pr.body_file),
                          "pushed": pr.pushed, "labelled": pr.labelled, "notes": list(pr.notes),
                          "error": str(pr.error) if pr.error else None}
    return out
