"""The okfgit review GitHub Action's one step: review the pull request, comment, label.

Run by ``action.yml`` (with the Python of the virtualenv okfgit is installed in) in a checkout of
the pull request's head with its history (``fetch-depth: 0``); ``--touches`` first says whether
the pull request changes anything under ``.okf/`` at all (``scope``). Standard
library only; everything GitHub is reached through ``gh`` (``GH_TOKEN``, ``GH_REPO``), so a test
runs this file as it is, with the GitHub variables set and a recording ``gh`` on PATH.

1. The pull request (number, body, base and head branch) comes from ``$GITHUB_EVENT_PATH``
   (``pull_request`` or ``pull_request_review`` events).
2. Its approvals: ``gh api repos/{owner}/{repo}/pulls/{n}/reviews``, the latest review of each
   account that is not a comment. One counts (``--approved-by human:<login>``) only when it is
   ``APPROVED``, by a person (not ``type: Bot``, not a ``[bot]`` login), not by the pull request's
   author, and of the head under review (its ``commit_id`` is ``pull_request.head.sha``): an
   approval of an earlier head approved other words. Each one left out is named, with why.
3. ``okfgit review --format markdown --output <full report>`` (with ``--pr-body`` when the body
   holds an ``okf-harvest`` block, followed by the comments that continue it): the bounded comment on stdout, the full report as a file
   (``action.yml`` uploads it as the ``okf-review-report`` artifact).
4. One comment, found again by its first line ``<!-- okfgit-review -->``: updated in place, or
   created (and when another run created one at the same moment, the oldest is kept:
   ``one_comment``); a pull request that changes nothing under ``.okf/`` and has no comment yet
   gets none.
5. The ``okf-needs-human`` label is added while the verdict is needs-human, and never removed
   here: it is a hard stop only a person takes off (the check turns green on its own once a
   valid approval of this head exists).
6. With ``OKF_MERGE=true`` (the ``merge`` input), a verdict of merge for exactly the pull
   request's current head merges it: ``gh pr merge --match-head-commit <that head>``, so a push
   after the review is never merged unreviewed. Any other verdict, a review of another head, or
   the ``okf-needs-human`` label still on the pull request merges nothing and says why.
7. Outputs ``verdict``, ``report`` and ``merged`` go to ``$GITHUB_OUTPUT``; the gate step of
   ``action.yml`` fails the check on request-changes (and on needs-human, unless told otherwise).

Exit 0 when the review ran (whatever its verdict), 1 when it could not (a broken checkout, no
base branch, okfgit failing): then nothing is posted and the message says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- okfgit-review -->"
LABEL = "okf-needs-human"
VERDICTS = ("merge", "request-changes", "needs-human", "amend", "close")  # amend, close: a maintainer's
METHODS = ("merge", "squash", "rebase")


def main() -> int:
    env = os.environ
    event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
    pr = event.get("pull_request") or {}
    number = pr.get("number")
    if not number:
        print("okfgit review: this event has no pull request; nothing to review", file=sys.stderr)
        return 1
    repo = env.get("GITHUB_REPOSITORY", "")
    out_dir = Path(env.get("RUNNER_TEMP") or ".") / "okf-review"
    out_dir.mkdir(parents=True, exist_ok=True)
    gh_env = {**env, "GH_REPO": repo}

    head_sha = str((pr.get("head") or {}).get("sha") or "")
    author = str((pr.get("user") or {}).get("login") or "")
    approvers, left_out = approvals(gh_json(["api", "--paginate", f"repos/{repo}/pulls/{number}/reviews"], gh_env),
                                    head_sha, author)
    for note in left_out:
        print(f"okfgit review: not counted as an approval: {note}")
    comments = [c for c in gh_json(["api", "--paginate", f"repos/{repo}/issues/{number}/comments"], gh_env) or []
                if isinstance(c, dict)]
    args = [sys.executable, "-m", "okfgit", "review", "--format", "markdown",
            "--output", str(out_dir / "okf-review-full.md")]
    body = pr.get("body") or ""
    if "```okf-harvest" in body:
        # a harvest too large for one body continues in comments (```okf-harvest-continued blocks)
        more = [str(c.get("body", "")) for c in comments if "```okf-harvest-continued" in str(c.get("body", ""))]
        (out_dir / "pr-body.md").write_text("\n\n".join([body, *more]), encoding="utf-8")
        args += ["--pr-body", str(out_dir / "pr-body.md")]
    for actor in approvers:
        args += ["--approved-by", actor]
    if approvers:
        args += ["--approvals-checked", f"GitHub reviews approving head {head_sha[:12]}, by people other than "
                                        "the author"]
    # pull_request_review events do not set these; the event always names both branches
    review_env = {**env, "GITHUB_BASE_REF": (pr.get("base") or {}).get("ref") or env.get("GITHUB_BASE_REF", ""),
                  "GITHUB_HEAD_REF": (pr.get("head") or {}).get("ref") or env.get("GITHUB_HEAD_REF", "")}
    ran = subprocess.run(args, env=review_env, capture_output=True, text=True,
                         cwd=env.get("GITHUB_WORKSPACE") or None)
    sys.stderr.write(ran.stderr)
    block = review_block(ran.stdout)
    if ran.returncode not in (0, 2) or block is None:
        print(f"okfgit review could not judge this pull request (exit {ran.returncode}); nothing was posted",
              file=sys.stderr)
        return 1
    verdict = block["verdict"]
    comment = f"{MARKER}\n{ran.stdout}"
    (out_dir / "okf-review.md").write_text(comment, encoding="utf-8")
    print(f"okfgit review: {verdict}" + (f" (approved by {', '.join(approvers)})" if approvers else ""))

    changed = bool(block.get("concepts") or block.get("findings") or (block.get("omitted") or {}).get("concepts"))
    post_comment(repo, number, comment, changed, comments, out_dir, gh_env)
    set_label(number, verdict == "needs-human", gh_env)
    merged = env.get("OKF_MERGE") == "true" and merge(number, block, pr, env.get("OKF_MERGE_METHOD", ""), gh_env)
    with open(env.get("GITHUB_OUTPUT") or os.devnull, "a", encoding="utf-8") as fh:
        fh.write(f"verdict={verdict}\nreport={out_dir / 'okf-review-full.md'}\nmerged={str(merged).lower()}\n")
    return 0


def merge(number: int, block: dict[str, Any], pr: dict[str, Any], method: str, env: dict[str, str]) -> bool:
    """Merge the pull request when the verdict is merge for its current head, and only that head:
    GitHub refuses ``--match-head-commit`` once the branch moved, so what merges is what was reviewed."""
    head = (pr.get("head") or {}).get("sha")
    if block.get("verdict") != "merge":
        print(f"not merged: the verdict is {block.get('verdict')}")
        return False
    if any(isinstance(label, dict) and label.get("name") == LABEL for label in pr.get("labels") or []):
        print(f"not merged: the {LABEL} label is on the pull request; a person takes it off")
        return False
    if not head or block.get("head") != head:
        print(f"not merged: okfgit reviewed {str(block.get('head'))[:12]}, but the pull request's head is "
              f"{str(head)[:12]} (check out the pull request's head, not its merge commit)")
        return False
    if method not in METHODS:
        print(f"::warning::not merged: merge-method {method!r} is not one of {', '.join(METHODS)}")
        return False
    if gh(["pr", "merge", str(number), f"--{method}", "--match-head-commit", head], env) is None:
        return False
    print(f"merged {head[:12]}, the head okfgit reviewed")
    return True


def approvals(reviews: Any, head_sha: str, author: str) -> tuple[list[str], list[str]]:
    """(``human:<login>`` of each person whose latest review (comments aside) approves ``head_sha``,
    in order; why each other approving review does not count)."""
    latest: dict[str, dict[str, Any]] = {}
    for review in reviews if isinstance(reviews, list) else []:
        if not isinstance(review, dict):
            continue
        login = (review.get("user") or {}).get("login")
        if login and review.get("state") in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
            latest.pop(login, None)  # re-inserted last: the order of the latest decisions
            latest[login] = review
    counted: list[str] = []
    left_out: list[str] = []
    for login, review in latest.items():
        if review.get("state") != "APPROVED":
            continue
        why = refusal(login, review, head_sha, author)
        if why:
            left_out.append(f"{login} ({why})")
        else:
            counted.append(f"human:{login}")
    return counted, left_out


def refusal(login: str, review: dict[str, Any], head_sha: str, author: str) -> str:
    """Why an approving review is not a person's approval of this head ("" when it is)."""
    if (review.get("user") or {}).get("type") == "Bot" or login.lower().endswith("[bot]"):
        return "a bot, not a person"
    if author and login == author:
        return "the pull request's author"
    commit = str(review.get("commit_id") or "")
    if not head_sha or commit != head_sha:
        return f"it approved {commit[:12] or 'no commit'}, not the head under review {head_sha[:12] or '(unknown)'}"
    return ""


def review_block(markdown: str) -> dict[str, Any] | None:
    """The ``okf-review`` block at the end of the comment, or None."""
    if "```okf-review\n" not in markdown:
        return None
    text = markdown.rsplit("```okf-review\n", 1)[1].rsplit("```", 1)[0]
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) and data.get("verdict") in VERDICTS else None


def post_comment(repo: str, number: int, comment: str, changed: bool, comments: list[dict[str, Any]], out_dir: Path,
                 env: dict[str, str]) -> None:
    """Update the one okfgit comment, or create it; a read-only token (a fork) only warns."""
    existing = [c for c in comments if str(c.get("body", "")).startswith(MARKER)]
    if not existing and not changed:
        print("nothing under .okf/ changed; no comment")
        return
    payload = out_dir / "comment.json"
    payload.write_text(json.dumps({"body": comment}), encoding="utf-8")
    if existing:
        command = ["api", "--method", "PATCH", f"repos/{repo}/issues/comments/{existing[0]['id']}",
                   "--input", str(payload)]
    else:
        command = ["api", "--method", "POST", f"repos/{repo}/issues/{number}/comments", "--input", str(payload)]
    posted = gh(command, env)
    if posted is None:
        print("::warning::could not post the review comment (a fork's read-only token?); the check still gates")
    elif not existing:
        one_comment(repo, number, posted, payload, env)


def one_comment(repo: str, number: int, posted: str, payload: Path, env: dict[str, str]) -> None:
    """After creating the comment: when another run created one too (two runs at once, without
    the workflow's concurrency group), the oldest stays, with this run's text, and this run's own
    goes. Each run deletes only its own, so two runs settle on one comment."""
    try:
        mine = json.loads(posted).get("id")
    except (ValueError, AttributeError):
        return
    found = gh_json(["api", "--paginate", f"repos/{repo}/issues/{number}/comments"], env) or []
    ours = sorted(c["id"] for c in found if isinstance(c, dict) and str(c.get("body", "")).startswith(MARKER)
                  and isinstance(c.get("id"), int))
    if mine is None or len(ours) < 2 or ours[0] == mine:
        return
    gh(["api", "--method", "PATCH", f"repos/{repo}/issues/comments/{ours[0]}", "--input", str(payload)], env)
    gh(["api", "--method", "DELETE", f"repos/{repo}/issues/comments/{mine}"], env)


def set_label(number: int, wanted: bool, env: dict[str, str]) -> None:
    """Add the label while a person's approval is needed. Never removed here: a bot (this
    Action among them) taking the hard stop off would defeat it; a person removes it."""
    if wanted:
        gh(["label", "create", LABEL, "--force", "--color", "D93F0B",
            "--description", "Knowledge changes that need a person's approval"], env)
        gh(["pr", "edit", str(number), "--add-label", LABEL], env)


def gh(args: list[str], env: dict[str, str], quiet: bool = False) -> str | None:
    """Run ``gh``; its output, or None (with a warning unless ``quiet``) when it failed."""
    try:
        proc = subprocess.run(["gh", *args], env=env, capture_output=True, text=True)
    except OSError as exc:
        print(f"::warning::gh {' '.join(args[:2])}: {exc}")
        return None
    if proc.returncode != 0:
        if not quiet:
            print(f"::warning::gh {' '.join(args[:3])} failed: {proc.stderr.strip()}")
        return None
    return proc.stdout


def gh_json(args: list[str], env: dict[str, str]) -> Any:
    """``gh api --paginate`` output: one JSON array per page, joined into one list."""
    text = gh(args, env)
    if text is None:
        return None
    decoder = json.JSONDecoder()
    items: list[Any] = []
    at = 0
    while at < len(text):
        if text[at].isspace():
            at += 1
            continue
        value, at = decoder.raw_decode(text, at)
        items += value if isinstance(value, list) else [value]
    return items


def touches_knowledge(event: dict[str, Any], cwd: str | None) -> bool:
    """Whether the pull request changes anything under ``.okf/``: ``git diff`` of the base
    commit the event names and HEAD, in the checkout. A review event (an approval) has no paths
    filter, so this is what keeps the action off pull requests that are not knowledge changes.
    True when it cannot be told (the review then says what is wrong)."""
    base = ((event.get("pull_request") or {}).get("base") or {}).get("sha")
    if not base:
        return True
    diff = subprocess.run(["git", "diff", "--quiet", f"{base}...HEAD", "--", ".okf/"], cwd=cwd,
                          capture_output=True)
    return diff.returncode != 0  # 1: it does; 0: it does not; anything else: cannot tell


def scope() -> int:
    """``--touches``: the outputs ``touches`` (true or false) and, when false, ``skipped``."""
    env = os.environ
    event = json.loads(Path(env["GITHUB_EVENT_PATH"]).read_text(encoding="utf-8"))
    touches = touches_knowledge(event, env.get("GITHUB_WORKSPACE") or None)
    if not touches:
        print("this pull request does not touch .okf/; okfgit review has nothing to do")
    with open(env.get("GITHUB_OUTPUT") or os.devnull, "a", encoding="utf-8") as fh:
        fh.write("touches=true\n" if touches else "touches=false\nskipped=skipped\n")
    return 0


if __name__ == "__main__":
    sys.exit(scope() if sys.argv[1:] == ["--touches"] else main())
