"""``okfgit project``: parse, ask ``local.noop``, else call ``projection.project``, print.

Only click and the standard-library no-op check are imported at module level: a no-op must
cost about a process start, so pygit2, YAML and the projection code load only when there is work.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from okfgit.commands._common import emit_json, json_option, quiet_failures, repo_option, run_option, warn
from okfgit.errors import UsageError
from okfgit.local import noop
from okfgit.format.words import plural

if TYPE_CHECKING:
    from okfgit.targets.budget import Explanation
    from okfgit.flows.projection import Report

NOT_OURS = "(not okfgit's: an agent's or a person's file)"
NOTHING_TO_DO = "nothing to do: the knowledge at HEAD and every target are as okfgit left them"


@click.command("project")
@click.option("--scope", type=click.Choice(["global", "project", "job", "all"]), default="all", show_default=True,
              help="Which tiers to project. The memory folder mirrors exactly the tiers selected.")
@click.option("--target", type=click.Choice(["claude", "gemini", "agents", "all"]), default="all", show_default=True,
              help="claude: the memory folder and ~/.claude/CLAUDE.md; gemini: Gemini CLI's memory folder, "
                   "~/.gemini/GEMINI.md and the repository's GEMINI.md; agents: <repo>/AGENTS.md, "
                   "$CODEX_HOME/AGENTS.md and the home files of opencode, Copilot CLI and Amp.")
@click.option("--dry-run", is_flag=True, help="Print a unified diff of every file that would change; write nothing.")
@click.option("--explain", is_flag=True,
              help="After projecting, show what each agent sees: for Claude Code the MEMORY.md lines (and what "
                   "was cut), the 200 memory files it can recall, in order, and the concepts in neither; for "
                   "Codex the size of its AGENTS.md files against the 32 KiB it loads. With --json, as JSON.")
@click.option("--quiet", is_flag=True,
              help="For agent hooks (Claude Code's SessionStart, whose stdout becomes context): print nothing "
                   "on stdout; warnings and errors go to stderr, and any failure exits 1.")
@repo_option
@run_option
@json_option
def project_cmd(scope: str, target: str, dry_run: bool, explain: bool, quiet: bool, repo: Path | None,
                run: str | None, as_json: bool) -> int:
    """Project the knowledge at HEAD into each agent's own files.

    Merges the tiers by okf_id (job over project over global) and writes each concept
    verbatim into Claude Code's memory folder for this repository, with a MEMORY.md
    index inside Claude Code's budget; a managed block (navigation protocol and index
    pointers) in ~/.claude/CLAUDE.md, $CODEX_HOME/AGENTS.md and <repo>/AGENTS.md.

    Only files okfgit wrote are ever overwritten or removed; text around a managed
    block is never changed. When nothing changed since the last run, nothing is read
    beyond a few stats and nothing is written. Exit 3 when a target could not be
    written (the others still are). Outside a git repository only the global tier
    is projected.
    """
    if quiet and (dry_run or as_json or explain):
        raise UsageError("--quiet prints nothing, so it does not go with --dry-run, --json or --explain")
    if explain and dry_run:
        raise UsageError("--explain reads what the agents see after projecting; it does not go with --dry-run")
    if quiet:
        quiet_failures()
    if not dry_run and not as_json and not explain and noop.project(
        os.environ, os.getcwd(), repo=str(repo) if repo else None, scope=scope, target=target, run=run
    ) is noop.Verdict.UP_TO_DATE:
        if not quiet:
            click.echo(NOTHING_TO_DO)
        return 0
    from okfgit.flows import projection
    from okfgit.commands._common import with_progress, workspace

    ctx, ws = workspace(repo, run)
    ctx = with_progress(ctx, quiet=quiet or as_json or dry_run)
    report = projection.standalone(ctx, ws, scope=scope, target=target, dry_run=dry_run, run_arg=run,
                                   explain=explain)
    warn(report.warnings)
    warn(f"{o.path}: {o.reason}" for o in report.outcomes if o.action in ("skipped", "failed"))
    if as_json:
        emit_json(report.to_json())
    elif explain and report.explanation is not None:
        click.echo(_summary(report, dry_run=False))
        click.echo(_explained(report.explanation))
    elif dry_run:
        if report.diff:
            click.echo(report.diff)
        click.echo(_summary(report, dry_run=True))
    elif not quiet:
        click.echo(_summary(report, dry_run=False))
    return report.exit_code


def _summary(report: Report, dry_run: bool) -> str:
    counts = {a: report.count(a) for a in ("written", "unchanged", "removed", "skipped", "failed")}
    verb = "would be " if dry_run else ""
    if not any(counts[a] for a in ("written", "removed", "skipped", "failed")):
        head = "nothing to do: every target is up to date" if counts["unchanged"] else "nothing to project"
    else:
        parts = [f"{n} {verb}{a}" for a, n in counts.items() if n]
        head = "projected: " + ", ".join(parts)
    lines = [head]
    tiers = ", ".join(f"{t.label}@{t.commit[:7]}" for t in report.tiers) or "none"
    lines.append(f"  tiers: {tiers}")
    if report.memory_dir is not None:
        held = report.held
        cut = f" (holds {held.held:,} of {held.total:,} concepts: its budget, {held.source})" \
            if held is not None and held.held < held.total else ""
        lines.append(f"  memory folder: {report.memory_dir}{cut}")
    for o in report.outcomes:
        if o.target != "claude-memory" and o.action != "unchanged":
            lines.append(f"  {o.action}: {o.path}")
    return "\n".join(lines)


def _explained(ex: Explanation) -> str:
    lines = ["", "Claude Code"]
    if ex.memory_dir is None:
        lines.append("  no memory folder (no tier projected into it)")
    else:
        cut = "; cut, pointing to the tier indexes for the rest" if ex.memory_md_cut else ""
        lines.append(f"  MEMORY.md: {len(ex.memory_md_lines)} lines, {ex.memory_md_bytes:,} bytes (loads 200 lines, "
                     f"25,000 bytes); lists {ex.memory_md_listed} of {ex.projected} projected concepts{cut}")
        if ex.held is not None:
            lines.append(f"  memory folder: holds {ex.held.held:,} of {ex.held.total:,} concepts (its budget: "
                         f"{ex.held.limit:,} files, {ex.held.source}, and every human-verified one)")
        lines.append(f"  recall: the {len(ex.recall)} newest memory files, in the order Claude Code ranks them:")
        for rank, (name, citation) in enumerate(ex.recall, start=1):
            lines.append(f"    {rank:>3}. {name}  {citation or NOT_OURS}")
        lines.append(f"  in neither: {plural(len(ex.neither), 'concept')}" + (":" if ex.neither else ""))
        lines.extend(f"    {citation}" for citation in ex.neither[:20])
        if len(ex.neither) > 20:
            lines.append(f"    ... and {len(ex.neither) - 20} more (--json lists them all)")
    lines.append("Codex")
    for f in ex.files:
        if f.agent == "codex":
            state = f"{f.size:,} bytes, okfgit's block {f.block:,}" if f.exists else "absent"
            lines.append(f"  {f.path}: {state}")
    lines.append(f"  together {ex.codex_bytes:,} of the 32,768 bytes Codex loads")
    for sentence in ex.over_budget:
        lines.append(f"over budget: {sentence}")
    return "\n".join(lines)
