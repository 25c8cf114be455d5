"""``okfgit review``: the knowledge diff of a branch, with a verdict for its pull request."""

from __future__ import annotations

from pathlib import Path
from typing import IO

import click

from okfgit.verbs import review
from okfgit.verbs import review_render
from okfgit.commands._common import repo_option, workspace

_RENDER = {"text": review_render.as_text, "markdown": review_render.as_markdown, "json": review_render.as_json}


@click.command("review")
@click.argument("range_", metavar="[BASE...HEAD]", required=False)
@click.option("--format", "fmt", type=click.Choice(sorted(_RENDER)), default="text", show_default=True,
              help="markdown is a pull request comment ending with a fenced okf-review JSON block.")
@click.option("--pr-body", type=click.File("r", encoding="utf-8"), default=None, metavar="FILE",
              help="A pull request body ('-' for stdin) whose okf-harvest block is checked against the head tree.")
@repo_option
def review_cmd(range_: str | None, fmt: str, pr_body: IO[str] | None, repo: Path | None) -> int:
    """Review the project tier's (.okf/) changes between BASE and HEAD: concepts
    added, modified (field by field, body as a diff), removed and renamed (matched
    by okf_id); doctor findings the branch introduces; the review rules (one home
    per okf_id and title, explicit supersession of decisions, human-reviewed
    concepts need a person, no needs-merge leftovers); and who made each commit.

    BASE...HEAD compares with their merge base (BASE..HEAD with BASE itself; a
    single BASE means BASE...HEAD). Default: HEAD's upstream, else main,
    origin/main, master or origin/master. Exit 0 when the verdict is merge, 2 for request-changes or
    needs-human, so CI can gate on it.
    """
    ctx, ws = workspace(repo)
    body = pr_body.read() if pr_body is not None else None
    result = review.review(ctx, ws, range_, body)
    click.echo(_RENDER[fmt](result), nl=False)
    return result.exit_code
