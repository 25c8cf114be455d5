"""The ``okf-harvest`` block: a promotion's pull request, written and checked.

``promote --branch`` writes it into the pull request body (prose plus a fenced JSON
block naming each promoted concept's ``okf_id``, path and blob OID); ``review --pr-body``
reads it back and checks every claim against the branch's tree. One module owns the
format on both sides.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from okfgit.records import record
from okfgit import TOOL
from okfgit.context import Context
from okfgit.format import markdown, trailers
from okfgit.format.findings import ERROR, WARNING, Finding
from okfgit.errors import OkfError, UnwritableError, UsageError, ValidationError
from okfgit.plumbing import clean_git_env
from okfgit.knowledge.snapshot import Snapshot
from okfgit.local import pr_bodies

if TYPE_CHECKING:  # only named in annotations: review reads blocks without importing promotion
    from okfgit.verbs.promote import Item, Promotion, PromotionPlan

VERSION = 1
LABEL = "okf-harvest"
CONTINUED = "okf-harvest-continued"  # the fence of a block's continuation, in a pull request comment
# GitHub refuses a pull request body or comment over 65,536 characters; keep a margin.
BODY_LIMIT = 60_000


# -- writing ---------------------------------------------------------------------------


def block(p: Promotion) -> dict[str, object]:
    """What was promoted, from where, by what."""
    pp = p.plan
    return {
        "version": VERSION,
        "run": pp.source.run,
        "source": {"tier": pp.source.name, "run": pp.source.run, "commit": pp.source_head},
        "destination": {"tier": pp.destination.name, "branch": pp.branch, "commit": p.destination_oid},
        "concepts": [_claim(i) for i in pp.items],
        "tool": TOOL,
    }


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
    ]
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
    lines = [f"Promotes {len(pp.items)} concepts learned in {origin} into the {pp.destination.label} knowledge "
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


@record(frozen=True)
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

    def shell(self) -> str:
        return "\n".join(shlex.join(c) for c in self.commands)


def check_remote(pp: PromotionPlan, remote: str) -> None:
    """Before anything is committed: ``--open-pr`` needs ``remote`` in the destination repository."""
    repo = pp.destination.open() if pp.destination.exists() else None
    remotes = repo.remotes() if repo is not None else []
    if remote not in remotes:
        known = f" (it has: {', '.join(remotes)})" if remotes else " (it has none)"
        raise UsageError(f"--open-pr pushes to the remote {remote!r}, which {pp.destination.repo_path} does not "
                         f"have{known}; add it first, e.g. `git remote add {remote} <url>`, or pass --remote "
                         "(nothing was written)")


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
    if shutil.which("gh", path=ctx.environ.get("PATH")) is None:
        return PullRequest(commands, body_file, ran=False)
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


def _run(ctx: Context, p: Promotion, command: list[str]) -> tuple[bool, str]:
    """Run ``command`` in the destination repository: (succeeded, its output or why it failed)."""
    try:
        proc = subprocess.run(command, cwd=p.plan.destination.repo_path, env=clean_git_env(ctx.environ),
                              capture_output=True, text=True)
    except OSError as exc:
        return False, f"{command[0]}: {exc.strerror or exc}"
    if proc.returncode != 0:
        return False, proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}"
    return True, proc.stdout.strip()


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
    if data.get("version") != VERSION:
        out.append(Finding("harvest-block", ERROR, WHERE, f"{LABEL} version {data.get('version')!r} is not "
                           f"{VERSION}"))
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
