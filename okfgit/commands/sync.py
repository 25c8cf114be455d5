"""``okfgit sync``: the fast no-op check first (standard library only), then the real work."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click

from okfgit.local import fastpath
from okfgit.local import stamps as syncstamp
from okfgit.commands._common import repo_option, run_option
from okfgit.errors import OkfError

NOTHING_TO_DO = "okfgit sync: up to date"
# okfgit.verbs.hooks.HOOK_NAMES, spelled out: importing okfgit.verbs.hooks here would slow every no-op
HOOK_NAMES = ("post-checkout", "post-merge", "post-commit", "post-rewrite")


@click.command("sync")
@click.option("--hook", type=click.Choice(HOOK_NAMES), default=None, metavar="NAME",
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
@click.argument("hook_args", nargs=-1)
@repo_option
@run_option
def sync_cmd(hook: str | None, wait_s: float, quiet: bool, fetch: bool, hook_args: tuple[str, ...],
             repo: Path | None, run: str | None) -> int:
    """Capture what agents wrote into Claude Code memory, then project the KB into
    every agent's files, under a lock. This is what the git hooks and the Claude Code
    session hooks run. When nothing changed since the last sync it costs about a
    process start. Exit 3 when a capture commit or a target write failed."""
    cwd = os.getcwd()
    try:
        found = fastpath.find_repo(os.path.join(cwd, str(repo)) if repo else cwd)
    except (fastpath.Unsure, OSError):
        found = None  # a damaged .git file: the full path below says what is wrong
    # Nothing changed: done, whatever the hook (a skipped hook does nothing either). Checked
    # first because it is the cheaper question: hooks.py loads more than the stdlib. A git
    # hook checks the memory folders only, not every file: the cost must not grow with the
    # KB, and an in-place edit of a memory file is not something git did (the next sync
    # without --hook, e.g. Claude Code's SessionEnd, captures it).
    # A git hook's no-op never touches the network; any other sync is not a no-op when an
    # exchange with the global remote is due (one small file read: local/exchange.py).
    if not fetch and found is not None and (hook is not None or not _exchange_due()) and fastpath.check(os.environ, cwd, repo=str(repo) if repo else None, scope="all",
                                            target="all", run=run) \
            and syncstamp.matches(fastpath.common_dir(found[1]), deep=hook is None):
        if hook is None and not quiet:
            click.echo(NOTHING_TO_DO)
        return 0
    if hook is not None and found is not None:
        from okfgit.verbs import hooks

        if not hooks.should_run(hook, list(hook_args), Path(found[1])):
            return 0
    from okfgit.verbs import sync
    from okfgit.commands._common import warn, workspace

    failure = 1 if quiet else 3  # never 2 under --quiet: Claude Code reads 2 as "block"
    try:
        ctx, ws = workspace(repo, run)
        if quiet and ws.project_repo is None:
            return 0  # a session outside any git repository: nothing to sync
        report = sync.sync(ctx, ws, wait_s=wait_s, run_arg=run, fetch=fetch)
    except OkfError as exc:
        if not quiet:
            raise
        click.echo(f"okfgit: error: {exc}", err=True)
        return failure
    line = sync.one_line(report)
    if hook is not None:
        if line != NOTHING_TO_DO or report.failed:
            click.echo(line, err=True)
        return failure if report.failed else 0
    if not quiet:
        click.echo(line)
    if report.capture_deferred:
        warn([f"capture deferred: {report.capture_deferred}"])
    if report.capture_error:
        warn([f"capture failed: {report.capture_error}"])
    warn(report.warnings)
    if report.projection is not None:
        warn(f"{o.path}: {o.reason}" for o in report.projection.outcomes if o.action in ("skipped", "failed"))
    return failure if report.failed else 0


def _exchange_due() -> bool:
    """The global tier has a remote and its fetch interval has passed (standard library only)."""
    from okfgit.local import exchange

    env = os.environ
    data = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local", "share")
    return exchange.due(os.path.join(data, "okf", ".git"), time.time())
