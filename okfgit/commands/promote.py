"""``okfgit promote``: re-home concepts job -> project or project -> global."""

from __future__ import annotations

from pathlib import Path

import click

from okfgit.verbs.promote import pull_request
from okfgit.verbs import promote
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, warn, workspace


@click.command("promote")
@click.argument("refs", nargs=-1, required=True, metavar="REF...")
@click.option("--from", "from_", type=click.Choice(["job", "project"]), default="job", show_default=True,
              help="The tier the concepts leave.")
@click.option("--to", "to", type=click.Choice(["project", "global"]), default="project", show_default=True,
              help="The tier they join.")
@click.option("--branch", default=None, metavar="NAME",
              help="Commit into the destination on a NEW branch NAME made from its HEAD; the checkout is untouched "
                   "and a pull request title and body are printed.")
@click.option("--dir", "folder", default=None, help="Folder in the destination (default: the same path as in the source).")
@click.option("--open-pr", is_flag=True, help="With --branch: push it and run `gh pr create` (or print the commands "
                                               "when gh is not on PATH).")
@click.option("--remote", default="origin", show_default=True, help="The remote --open-pr pushes the branch to.")
@click.option("--dry-run", is_flag=True, help="Show both commits that would be made; write nothing.")
@repo_option
@run_option
@json_option
def promote_cmd(refs: tuple[str, ...], from_: str, to: str, branch: str | None, folder: str | None, open_pr: bool,
                remote: str, dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Promote concepts (REF: a citation as `ls` prints it, a path, okf_id, slug,
    name, title or unique prefix, looked up in the source tier) from the run to the
    project, or from the project to global. Each keeps its okf_id, gets its scope
    re-set, and both tiers' indexes are updated: one commit in the destination
    (trailer Okf-Promoted-From) and then one in the source removing it (trailer
    Okf-Promoted-To). Everything is checked before the first commit; a link that
    would dangle at the destination, an okf_id it already has or an existing
    --branch stop it with exit 2 and nothing written."""
    if open_pr and branch is None:
        raise click.UsageError("--open-pr needs --branch NAME")
    ctx, ws = workspace(repo, run)
    pp = promote.plan_promotion(ctx, ws, refs, from_, to, branch=branch, folder=folder)
    if open_pr:
        pull_request.check_remote(pp, remote)
    if dry_run:
        click.echo(promote.dry_run(ctx, pp))
        return
    done = promote.promote(ctx, pp, replan=lambda: promote.plan_promotion(ctx, ws, refs, from_, to, branch=branch,
                                                                          folder=folder))
    pr = pull_request.open_pr(ctx, done, remote) if open_pr else None
    if as_json:
        emit_json(pull_request.to_json(done, pr))
    else:
        _print(done, pr)
    if pr is not None and pr.error is not None:
        raise pr.error


def _print(done: promote.Promotion, pr: pull_request.PullRequest | None) -> None:
    pp = done.plan
    warn(pp.warnings)
    warn(f"proposed supersession: {text}" for text in pp.proposals)
    on = f" on branch {pp.branch}" if pp.branch else ""
    for item in pp.items:
        minted = " (okf_id minted)" if item.minted else ""
        click.echo(f"promoted {pp.source.label}:{item.source_path} -> {pp.destination.label}:{item.path}{minted}")
    click.echo(f"{pp.destination.label} commit {done.destination_oid[:12]}{on}; "
               f"{pp.source.label} commit {done.source_oid[:12]}")
    if pp.branch:
        click.echo(f"\nPR title: {pull_request.pr_title(done)}\nPR body:\n\n{pull_request.pr_body(done)}")
    if pr is None:
        return
    warn(pr.notes)
    if not pr.ran:
        click.echo(f"{pr.why_not}; the body is kept in {pr.body_file}; to open the pull request, run in "
                   f"{pp.destination.repo_path}:\n{pr.shell()}")
    elif pr.error is None:
        click.echo(f"pushed {pp.branch}; body kept in {pr.body_file}\nopened the pull request: {pr.output}")
