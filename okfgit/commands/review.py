"""``okfgit review``: the knowledge diff of a branch, with a verdict for its pull request."""

from __future__ import annotations

from pathlib import Path

import click

from okfgit.verbs import review
from okfgit.render import review as review_render
from okfgit.commands._common import TEXT_FILE, repo_option, with_progress, workspace

_FORMATS = ("json", "markdown", "text")


@click.command("review")
@click.argument("range_", metavar="[BASE...HEAD]", required=False)
@click.option("--base", "base", default=None, metavar="BRANCH",
              help="The pull request's base branch, compared as BRANCH...HEAD (default: $GITHUB_BASE_REF, "
                   "else origin/HEAD's branch, else main or master).")
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="text", show_default=True,
              help="markdown is a pull request comment (under 60,000 characters) ending with a fenced okf-review "
                   "JSON block.")
@click.option("--pr-body", type=TEXT_FILE, default=None, metavar="FILE",
              help="A pull request body ('-' for stdin) whose okf-harvest block is checked against the head tree.")
@click.option("--approved-by", "approved_by", multiple=True, metavar="human:ID",
              help="A person who approved the pull request; turns needs-human findings into approved ones. Repeat "
                   "for more.")
@click.option("--approvals-checked", "approvals_checked", default="", metavar="TEXT",
              help="What verified the --approved-by approvals (the Action: 'approving reviews of <head> on "
                   "GitHub'); without it they are reported as asserted, not verified.")
@click.option("--verdict", "outcome", type=click.Choice(review.OUTCOMES), default=None,
              help="A maintainer's outcome, recorded in the okf-review block over the checks' verdict: amend (this "
                   "head is not merged as it stands; the amended head is reviewed again) or close.")
@click.option("--json", "as_json", is_flag=True, help="The report as JSON, as every other verb's --json (the same as "
              "--format json).")
@click.option("--full", is_flag=True, help="Markdown without the size bound (every concept's detail).")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="FILE",
              help="Also write the full, unbounded report in the chosen format to FILE (for a CI artifact).")
@click.option("--verbose", "-v", is_flag=True, help="Text: show the content of each added concept.")
@repo_option
def review_cmd(range_: str | None, base: str | None, fmt: str, pr_body: str | None,
               approved_by: tuple[str, ...], approvals_checked: str, outcome: str | None, as_json: bool,
               full: bool, output: Path | None, verbose: bool,
               repo: Path | None) -> int:
    """Review the project tier's (.okf/) changes between BASE and HEAD: concepts
    added (with their content), modified (field by field, body as a diff), removed
    and renamed (matched by okf_id), and the concepts that link to each; doctor
    findings the branch introduces; the review rules (one home per okf_id and title,
    explicit supersession, human-verified knowledge and okfgit.toml need a person,
    the okf-harvest block claims exactly what changed); and who made each commit.

    BASE...HEAD compares with their merge base (BASE..HEAD with BASE itself; a
    single BASE means BASE...HEAD). Default: the pull request's base (--base, else
    $GITHUB_BASE_REF, else origin/HEAD's branch, else main or master), never the
    branch's own upstream; an empty range is exit 2. Exit 0 when the verdict is
    merge, 2 for request-changes or needs-human (or a maintainer's --verdict amend
    or close), so CI can gate on it.
    """
    if as_json:
        if fmt not in ("text", "json"):
            raise click.UsageError(f"--json and --format {fmt} ask for two formats; give one")
        fmt = "json"
    ctx, ws = workspace(repo)
    result = review.review(with_progress(ctx, quiet=fmt == "json"), ws, range_, pr_body, base_ref=base,
                           approved_by=approved_by, approvals_checked=approvals_checked, outcome=outcome)
    if output is not None:
        from okfgit import plan as plan_mod  # only here: a review that writes no file never loads the writer

        report = render(result, fmt, full=True, verbose=True).encode("utf-8")
        write = plan_mod.FileWrite(output, report, "the full review report", fsync=False)
        plan_mod.apply(ctx, plan_mod.Plan(writes=[write])).raise_failed()
    click.echo(render(result, fmt, full=full, verbose=verbose), nl=False)
    return result.exit_code


def render(result: review.Review, fmt: str, *, full: bool, verbose: bool) -> str:
    if fmt == "json":
        return review_render.as_json(result)
    if fmt == "markdown":
        return review_render.as_markdown(result, full=full)
    return review_render.as_text(result, verbose=verbose)
