"""``okfgit proposal accept|drop SIBLING``: a person settles an agent's proposal."""

from __future__ import annotations

from pathlib import Path

import click

from okfgit import plan as plan_mod
from okfgit.commands._common import emit_json, json_option, repo_option, run_option, workspace
from okfgit.verbs import proposal


@click.group("proposal")
def proposal_cmd() -> None:
    """Settle an agent's version of a concept, kept as a needs-merge sibling.

    Capture never changes a concept a person verified, or a Decision, in place: the agent's
    version is committed beside it as <stem>.needs-merge.md, `okfgit status` lists it and
    exits 2, and review blocks on it. `accept` takes the agent's words (a Decision is
    superseded by a new one instead of rewritten; a verified concept is then verified by
    you); `drop` removes the sibling and keeps the concept. Either is one commit whose
    Okf-Actor trailer says who decided. Only a person (a human: actor) settles a proposal
    for a protected concept: not an agent running this in its shell.
    """


def _settle(how: str, sibling: str, dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> None:
    ctx, ws = workspace(repo, run)
    done = proposal.settle(ctx, ws, sibling, how, dry_run=dry_run)
    if as_json:
        emit_json(done.to_json())
    elif dry_run:
        click.echo(plan_mod.render(done.plan))
    else:
        click.echo(done.message())


@proposal_cmd.command("accept")
@click.argument("sibling")
@click.option("--dry-run", is_flag=True, help="Show the commit as diffs; write nothing.")
@repo_option
@run_option
@json_option
def accept_cmd(sibling: str, dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Take the agent's version SIBLING (a REF naming a needs-merge sibling: tier:path as
    `okfgit status` prints it, or its citation) as the concept."""
    _settle(proposal.ACCEPT, sibling, dry_run, repo, run, as_json)


@proposal_cmd.command("drop")
@click.argument("sibling")
@click.option("--dry-run", is_flag=True, help="Show the commit as diffs; write nothing.")
@repo_option
@run_option
@json_option
def drop_cmd(sibling: str, dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Remove the agent's version SIBLING (a REF naming a needs-merge sibling) and keep the
    concept as it is."""
    _settle(proposal.DROP, sibling, dry_run, repo, run, as_json)
