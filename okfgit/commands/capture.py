from __future__ import annotations

from pathlib import Path

import click

from okfgit.commands._common import emit_json, json_option, repo_option, run_option, warn, with_progress, workspace
from okfgit.format.words import plural


@click.command("capture")
@click.option("--from", "source", type=click.Choice(["claude-memory"]), default="claude-memory", show_default=True,
              help="Where agents wrote the facts.")
@click.option("--to", type=click.Choice(["global", "project", "job"]), default=None,
              help="Target tier (default: job when a run is active, else project when the repo has .okf/, else global).")
@click.option("--dry-run", is_flag=True, help="Show the commits that would be made; write nothing.")
@repo_option
@run_option
@json_option
def capture_cmd(source: str, to: str | None, dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> int:
    """Capture facts Claude Code wrote into its memory folder as commits.

    Native memories are migrated into OKF (every key and body byte kept), edits of
    projected concepts update them, and a concept changed on both sides keeps the KB's
    version with the agent's committed beside it as <stem>.needs-merge.md. Files okfgit
    itself wrote are skipped. Unreadable files are skipped with a warning and left
    untouched. Exit 0 even when files were skipped; 3 if a commit could not be made.
    """
    from okfgit import plan
    from okfgit.flows import capture

    ctx, ws = workspace(repo, run)
    ctx = with_progress(ctx, quiet=as_json)
    report = capture.standalone(ctx, ws, to=to, dry_run=dry_run)
    if as_json:
        emit_json(report.to_json())
    else:
        if dry_run and not report.plan.empty:
            click.echo(plan.render(report.plan))
        click.echo(summary(report, dry_run))
    warn(report.warnings)
    return 0


def summary(report: object, dry_run: bool) -> str:
    from okfgit.flows.capture import Report

    assert isinstance(report, Report)
    if not report.enabled:
        return report.reason
    verb = "would capture" if dry_run else "captured"
    counts = f"{verb} {plural(len(report.captured), 'file')}"
    if report.conflicts:
        counts += f", {plural(len(report.conflicts), 'conflict')} kept as needs-merge siblings"
    parts = [counts, f"{len(report.unchanged)} unchanged", f"{len(report.skipped)} skipped"]
    if report.held:
        parts.append(f"{len(report.held)} waiting for a tier")
    if report.deleted:
        parts.append(f"{len(report.deleted)} deleted by an agent (not written back; proposed deprecated)")
    lines = [", ".join(parts) + f" in {report.memory_dir}"]
    for item in report.captured:
        lines.append(f"  {item.action}: {item.origin} -> {item.tier.label}:{item.kb_path}")
    lines += [f"  deleted: {origin}" for origin in report.deleted]
    for label, commit in report.commits:
        lines.append(f"  commit {commit[:7]} in {label}")
    return "\n".join(lines)
