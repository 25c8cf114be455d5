"""``okfgit run start|status|end``, ``okfgit note`` and ``okfgit log``: the job tier."""

from __future__ import annotations

from pathlib import Path

import click

from okfgit import plan as plan_mod
from okfgit.flows import runs
from okfgit.knowledge.tiers import Tier, check_run
from okfgit.flows.concepts import NewConcept
from okfgit.commands._common import TEXT_FILE, emit_json, json_option, repo_option, run_option, warn, workspace


@click.group("run")
def run_cmd() -> None:
    """Runs: the job tier at <repo>/runstate/<slug>/okf/, one git repository per
    run of work, holding STATE.md, log.md and notes/. Its lessons reach the
    project only through `okfgit promote`."""


@run_cmd.command("start", short_help="Start a run: its repository, scaffold, active run.")
@click.argument("slug")
@click.option("--task", default=None, help="One or two sentences: what this run is for (goes into STATE.md).")
@click.option("--dry-run", is_flag=True, help="Show the scaffold commit that would be made; write nothing.")
@repo_option
@json_option
def start_cmd(slug: str, task: str | None, dry_run: bool, repo: Path | None, as_json: bool) -> None:
    """Start run SLUG: create its repository (excluded from the project repo via
    .git/info/exclude), scaffold STATE.md, log.md and notes/ as one commit, and make
    it the active run (`git config okf.run SLUG`). Starting an existing run makes it
    active again and writes nothing."""
    check_run(slug)
    ctx, ws = workspace(repo, slug, new_run=True)
    if dry_run:
        click.echo(plan_mod.render(runs.start_plan(ctx, ws, task)[1]) or "# nothing to do: the run exists")
        return
    done = runs.start(ctx, ws, task)
    if as_json:
        emit_json({"run": done.tier.run, "root": str(done.tier.root), "commit": done.commit, "message": done.message})
    else:
        click.echo(done.message + (f" ({done.commit[:7]})" if done.commit else ""))


@run_cmd.command("status", short_help="The run's concepts, promotable ones, promotions.")
@repo_option
@run_option
@json_option
def status_cmd(repo: Path | None, run: str | None, as_json: bool) -> None:
    """List the run's concepts, which of them are promotable (every concept but
    STATE.md whose `generalizes` is not `no`), and the promotions already made."""
    _, ws = workspace(repo, run)
    st = runs.status(ws)
    if as_json:
        emit_json(st.to_json())
        return
    click.echo(f"run {st.tier.run} ({'active' if st.active else 'not active'}) at {st.tier.root}")
    if st.state:
        click.echo(f"state: {st.state}")
    for item in st.concepts:
        mark = "promotable" if item.promotable else "stays"
        why = "run state" if item.concept.path == runs.STATE else f"generalizes: {item.generalizes}"
        click.echo(f"  {mark:<10}  {item.concept.citation}  {item.concept.type}: {item.concept.title} ({why})")
    for done in st.promoted:
        click.echo(f"  promoted    {done.okf_id} -> {done.destination}")
    warn(st.problems.values())


@run_cmd.command("end", short_help="Clear the active run; list what was not promoted.")
@repo_option
@run_option
@json_option
def end_cmd(repo: Path | None, run: str | None, as_json: bool) -> None:
    """End the active run: clear `git config okf.run` and list the promotable
    concepts that were not promoted. The run's repository is kept."""
    _, ws = workspace(repo, run)
    ended = runs.end(ws)
    if as_json:
        emit_json({"run": ended.tier.run, "cleared": ended.cleared, "still_active_by": ended.still_active_by,
                   "not_promoted": [{"path": c.concept.path, "okf_id": c.concept.okf_id, "title": c.concept.title}
                                    for c in ended.pending]})
        return
    click.echo(f"ended run {ended.tier.run}" if ended.cleared else f"run {ended.tier.run} was not the configured active run")
    if ended.still_active_by:
        click.echo(f"it is still selected by {ended.still_active_by}; unset it to leave the run")
    if ended.pending:
        click.echo(f"not promoted ({len(ended.pending)}); promote with "
                   f"`okfgit promote REF --from job --to project --run {ended.tier.run}`:")
        for item in ended.pending:
            click.echo(f"  {item.concept.citation}  {item.concept.type}: {item.concept.title}")
    else:
        click.echo("nothing left to promote")


@click.command("note")
@click.argument("title")
@click.option("--type", "type_", required=True, metavar="TYPE",
              help="One of: " + ", ".join(runs.NOTE_TYPES) + " (any case).")
@click.option("--claim", default=None, help="The one-line claim (default: the title).")
@click.option("--why", default=None, help="Why this is so, or why it was decided.")
@click.option("--evidence", default=None, help="What shows it: a command, a measurement, a link.")
@click.option("--generalizes", default="unsure", show_default=True, metavar="yes|no|unsure",
              help="Is it likely true beyond this run? `no` keeps it out of promotion.")
@click.option("--tag", "tags", multiple=True, help="A kebab-case tag; repeat for more.")
@click.option("--slug", default=None, help="File name under notes/ (default: from the title).")
@click.option("--cites", default=None, metavar="REF",
              help="The project (else global) concept this note bears on: a path, slug, title or okf_id "
                   "(project:REF or global:REF picks the tier). Needs --relation.")
@click.option("--relation", default=None, metavar="confirms|refines|contradicts",
              help="How the note bears on --cites; contradicts makes promote propose a supersession.")
@click.option("--dry-run", is_flag=True, help="Show the commit that would be made; write nothing.")
@repo_option
@run_option
@json_option
def note_cmd(title: str, type_: str, claim: str | None, why: str | None, evidence: str | None, generalizes: str,
             tags: tuple[str, ...], slug: str | None, cites: str | None, relation: str | None, dry_run: bool,
             repo: Path | None, run: str | None, as_json: bool) -> None:
    """Write one insight of the active run to notes/<slug>.md as a commit, with
    its folder index and a log.md entry; --cites/--relation record the concept
    it confirms, refines or contradicts."""
    ctx, ws = workspace(repo, run)
    def make() -> NewConcept:
        return runs.note_plan(ctx, ws, type_, title, claim=claim, why=why, evidence=evidence,
                              generalizes=generalizes, tags=tags, slug=slug, cites=cites, relation=relation)

    if dry_run:
        click.echo(plan_mod.render(make().plan))
        return
    done = runs.note(ctx, ws, make)
    if as_json:
        emit_json({"run": done.tier.run, "path": done.path, "okf_id": done.okf_id, "commit": done.commit})
    else:
        click.echo(f"{done.message} ({done.commit[:7] if done.commit else ''})")


@click.command("log")
@click.argument("text", nargs=-1, required=True)
@click.option("--dry-run", is_flag=True, help="Show the commit that would be made; write nothing.")
@repo_option
@run_option
@json_option
def log_cmd(text: tuple[str, ...], dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Add TEXT as the newest entry under today's `## YYYY-MM-DD` group of the
    active run's log.md, as a commit. Past entries are never edited."""
    ctx, ws = workspace(repo, run)
    words = " ".join(text)
    if dry_run:
        click.echo(plan_mod.render(runs.log_plan(ctx, ws, words)[1]))
        return
    done = runs.log(ctx, ws, lambda: runs.log_plan(ctx, ws, words))
    if as_json:
        emit_json({"run": done.tier.run, "path": done.path, "commit": done.commit})
    else:
        click.echo(f"{done.message} ({done.commit[:7] if done.commit else ''})")


@click.command("state")
@click.option("--task", default=None, help="What the run is for (its first sentence becomes the description).")
@click.option("--where", default=None, help="Where the work stands now.")
@click.option("--next", "next_steps", multiple=True, help="A next step; repeat for more (replaces the list).")
@click.option("--question", "questions", multiple=True, help="An open question; repeat for more (replaces the list).")
@click.option("--body", "body", type=TEXT_FILE, default=None, metavar="FILE",
              help="The whole new body of STATE.md ('-' for stdin) instead of section by section.")
@click.option("--dry-run", is_flag=True, help="Show the commit that would be made; write nothing.")
@repo_option
@run_option
@json_option
def state_cmd(task: str | None, where: str | None, next_steps: tuple[str, ...], questions: tuple[str, ...],
              body: str | None, dry_run: bool, repo: Path | None, run: str | None, as_json: bool) -> None:
    """Rewrite the active run's STATE.md, the current picture of its task, as one
    commit: each section given (Task, Where it stands, Next steps, Open questions)
    replaces that section; the rest of the file stays as it is."""
    ctx, ws = workspace(repo, run)

    def make() -> tuple[Tier, plan_mod.Plan]:
        return runs.state_plan(ctx, ws, task=task, where=where, next_steps=list(next_steps) or None,
                               questions=list(questions) or None,
                               body=body)

    if dry_run:
        click.echo(plan_mod.render(make()[1]) or "# nothing to do: STATE.md already says that")
        return
    done = runs.write_state(ctx, ws, make)
    if as_json:
        emit_json({"run": done.tier.run, "path": done.path, "commit": done.commit, "message": done.message})
    else:
        click.echo(done.message + (f" ({done.commit[:7]})" if done.commit else ""))
