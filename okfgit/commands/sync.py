"""``okfgit sync``: the no-op check first (standard library only), then the real work."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from okfgit.commands._common import quiet_failures, repo_option, run_option, warn
from okfgit.local import noop

if TYPE_CHECKING:  # the verb loads pygit2: only when there is work
    from okfgit.verbs.sync import SyncReport

NOTHING_TO_DO = "okfgit sync: up to date"


@click.command("sync")
@click.option("--hook", type=click.Choice(noop.HOOK_NAMES), default=None, metavar="NAME",
              help="Called from git hook NAME (post-checkout, post-merge, post-commit, post-rewrite): "
                   "skip file checkouts and mid-rebase states, print at most one line.")
@click.option("--wait", "wait_s", type=float, default=30.0, show_default=True,
              help="Seconds to wait for another running sync before skipping.")
@click.option("--quiet", is_flag=True,
              help="For agent hooks (Claude Code's SessionEnd and PreCompact): print nothing on stdout, do "
                   "nothing outside a git repository (exit 0); warnings and errors go to stderr, and any "
                   "failure exits 1.")
@click.option("--fetch", is_flag=True,
              help="Exchange with the global tier's git remote now (fetch, merge by concept, push), "
                   "whatever okf.fetchInterval says.")
@click.option("--dry-run", is_flag=True,
              help="Show what sync would do, writing nothing: the capture commits (as diffs) and the "
                   "projection's diff.")
@click.option("--json", "as_json", is_flag=True, help="Print what happened (or, with --dry-run, would) as JSON.")
@click.argument("hook_args", nargs=-1)
@repo_option
@run_option
def sync_cmd(hook: str | None, wait_s: float, quiet: bool, fetch: bool, dry_run: bool, as_json: bool,
             hook_args: tuple[str, ...], repo: Path | None, run: str | None) -> int:
    """Capture what agents wrote into Claude Code memory, then project the KB into
    every agent's files, under a lock. This is what the git hooks and the Claude Code
    session hooks run. When nothing changed since the last sync it costs about a
    process start. Exit 3 when a capture commit or a target write failed."""
    if dry_run or as_json:
        if hook is not None or quiet:
            from okfgit.errors import UsageError

            raise UsageError("--dry-run and --json are for a person or a tool, not with --hook or --quiet")
        return _report_cmd(dry_run, as_json, wait_s, fetch, repo, run)
    if quiet:
        quiet_failures()
    verdict = noop.sync(os.environ, os.getcwd(), repo=str(repo) if repo else None, run=run, hook=hook,
                        hook_args=hook_args, fetch=fetch, now=time.time())
    if verdict is not noop.Verdict.WORK:
        if verdict is noop.Verdict.UP_TO_DATE and hook is None and not quiet:
            click.echo(NOTHING_TO_DO)
        return 0
    from okfgit.commands._common import with_progress, workspace
    from okfgit.verbs import sync

    ctx, ws = workspace(repo, run)
    ctx = with_progress(ctx, quiet=quiet or hook is not None)
    if quiet and ws.project_repo is None:
        return 0  # a session outside any git repository: nothing to sync
    report = sync.sync(ctx, ws, wait_s=wait_s, run_arg=run, fetch=fetch, hook=hook, hook_args=hook_args)
    line = sync.summary_line(report)
    if hook is not None:
        if line != NOTHING_TO_DO or report.failed:
            click.echo(line, err=True)
        return report.exit_code
    if not quiet:
        click.echo(line)
    _warnings(report)
    return report.exit_code


def _report_cmd(dry_run: bool, as_json: bool, wait_s: float, fetch: bool, repo: Path | None, run: str | None) -> int:
    """``sync --dry-run`` and ``sync --json``: the full path always (no no-op check), with the
    plan's diffs or a JSON report."""
    from okfgit import plan
    from okfgit.commands._common import emit_json, workspace
    from okfgit.verbs import sync

    ctx, ws = workspace(repo, run)
    report = sync.preview(ctx, ws, run_arg=run) if dry_run else sync.sync(ctx, ws, wait_s=wait_s, run_arg=run,
                                                                           fetch=fetch, listed=as_json)
    line = sync.summary_line(report)
    if as_json:
        emit_json(report.to_json())
    else:
        if report.capture is not None and not report.capture.plan.empty:
            click.echo(plan.render(report.capture.plan))
        if report.projection is not None and report.projection.diff:
            click.echo(report.projection.diff)
        click.echo(line)
        if report.capture is not None and not report.capture.enabled:
            click.echo(report.capture.reason)
    _warnings(report)
    return 0 if dry_run else report.exit_code


def _warnings(report: SyncReport) -> None:
    """What sync's report says a person should know, on stderr."""
    if report.capture_deferred:
        warn([f"capture deferred: {report.capture_deferred}"])
    if report.capture_error:
        warn([f"capture failed: {report.capture_error}"])
    warn(report.warnings)
    if report.projection is not None:
        warn(f"{o.path}: {o.reason}" for o in report.projection.outcomes if o.action in ("skipped", "failed"))
