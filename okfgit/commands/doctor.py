from __future__ import annotations

from pathlib import Path

import click

from okfgit.verbs import doctor
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, scope_option, with_progress, workspace


@click.command("doctor")
@scope_option("all", allow_all=True)
@click.option("--worktree", is_flag=True, help="Check the files on disk instead of the tree at HEAD.")
@repo_option
@run_option
@json_option
def doctor_cmd(scope: str, worktree: bool, repo: Path | None, run: str | None, as_json: bool) -> int:
    """Check the tiers' knowledge at HEAD: OKF v0.2 conformance and okfgit's profile.

    The two groups are reported apart: a plain OKF bundle is conformant even without
    okfgit's keys, whose absence shows up in the profile group. Every finding has a code
    and a severity (see spec/okf-format.md). Exit 2 when any error is found, 0 when
    there are only warnings or nothing at all. A tier that does not exist is skipped
    with a note.
    """
    ctx, ws = workspace(repo, run)
    report = doctor.run(with_progress(ctx, quiet=as_json), ws, scope, worktree=worktree)
    if as_json:
        emit_json(report.to_json())
    else:
        click.echo(doctor.render_text(report))
    return report.exit_code
