"""The GitHub Action (action.yml): its steps run as GitHub runs them, against a real bare remote,
with the GitHub variables set and a recording ``gh`` on PATH."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import fake_gh
from tests.conftest import FIXTURES, Runner

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
REVIEW = FIXTURES / "review"
REPO = "acme/shop"
AUTHOR = "carol"  # who opened the pull request


def _builder():  # the review fixtures' builder, as test_review loads it
    import importlib.util

    spec = importlib.util.spec_from_file_location("review_fixture_build", REVIEW / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pull_request(tmp_path: Path, git: Runner, env: dict[str, str], edit: tuple[str, str, str]) -> Path:
    """origin (bare) with main; a clone (so origin/HEAD exists) on ``feature``, pushed, with one edit."""
    seed = _builder().build_base(tmp_path / "seed", env)
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin), cwd=tmp_path)
    git("push", "-q", str(origin), "main", cwd=seed)
    git("clone", "-q", str(origin), str(tmp_path / "work"), cwd=tmp_path)
    work = tmp_path / "work"
    git("checkout", "-q", "-b", "feature", cwd=work)
    path, old, new = edit
    target = work / ".okf" / path
    target.write_text(target.read_text().replace(old, new))
    git("commit", "-q", "-am", "Edit the knowledge", cwd=work)
    git("push", "-q", "--set-upstream", "origin", "feature", cwd=work)
    return work


def _run_action(work: Path, tmp_path: Path, env: dict[str, str], tools: Path, head_sha: str | None = None,
                **given: str) -> tuple[dict[str, int], dict[str, str]]:
    """Run action.yml's steps that have a ``run:`` (but the pip install: okfgit is importable here)
    with ``${{ }}`` resolved as GitHub would (``given``: inputs other than their defaults, with
    ``_`` for ``-``); return each step's exit code and the outputs."""
    event = tmp_path / "event.json"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    event.write_text(json.dumps({"pull_request": {
        "number": 7, "body": "Edits the deploy guide.", "base": {"ref": "main"},
        "head": {"ref": "feature", "sha": head_sha or head}, "user": {"login": AUTHOR, "type": "User"}}}))
    output = tmp_path / "github-output"
    output.write_text("")
    (tools / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # the runner's python, with okfgit
    (tools / "python3").chmod(0o755)
    github = dict(env, PATH=f"{tools}{os.pathsep}{env['PATH']}", GITHUB_EVENT_PATH=str(event),
                  GITHUB_REPOSITORY=REPO, GITHUB_BASE_REF="main", GITHUB_HEAD_REF="feature",
                  GITHUB_WORKSPACE=str(work), GITHUB_OUTPUT=str(output), RUNNER_TEMP=str(tmp_path / "runner"),
                  GITHUB_ACTION_PATH=str(ROOT))
    inputs = {k: given.get(k.replace("-", "_"), v.get("default", "")) for k, v in ACTION["inputs"].items()}
    codes: dict[str, int] = {}
    outputs: dict[str, str] = {}
    for step in ACTION["runs"]["steps"]:
        if "run" not in step or "pip install" in step["run"]:
            continue

        def resolve(value: str) -> str:
            def one(match: re.Match[str]) -> str:
                expr = match.group(1).strip()
                if expr.startswith("inputs."):
                    return "test-token" if expr == "inputs.github-token" else str(inputs[expr[7:]])
                if expr.startswith("steps.review.outputs."):
                    return outputs.get(expr.rsplit(".", 1)[1], "")
                raise AssertionError(f"unexpected expression {expr}")
            return re.sub(r"\$\{\{(.*?)\}\}", one, str(value))

        step_env = dict(github, **{k: resolve(v) for k, v in step.get("env", {}).items()})
        assert "${{" not in step["run"], "run: scripts take GitHub values through env, never pasted in"
        proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=step_env, capture_output=True,
                              text=True, timeout=120)
        codes[step["id"]] = proc.returncode
        print(f"step {step['id']}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")  # shown on failure
        outputs.update(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    return codes, outputs


def _calls(tools: Path, *prefix: str) -> list[dict]:
    return [c for c in fake_gh.calls(tools) if c["args"][: len(prefix)] == list(prefix)]


def test_needs_human_then_an_approval_turns_it_green(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten minutes", "five minutes"))
    reviews = f"api --paginate repos/{REPO}/pulls/7/reviews".split()
    comments = f"api --paginate repos/{REPO}/issues/7/comments".split()
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": reviews, "stdout": "[]"},
                                               {"prefix": comments, "stdout": "[]"}])
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes == {"review": 0, "gate": 1} and outputs["verdict"] == "needs-human"
    [post] = _calls(tools, "api", "--method", "POST")
    assert post["args"][3] == f"repos/{REPO}/issues/7/comments"
    posted = json.loads(post["body"])["body"]
    assert posted.startswith("<!-- okfgit-review -->\n## okfgit review: needs-human\n") and len(posted) < 60_000
    assert ["pr", "edit", "7", "--add-label", "okf-needs-human"] in [c["args"] for c in fake_gh.calls(tools)]
    assert _calls(tools, "label", "create", "okf-needs-human")
    full = Path(outputs["report"])
    assert full.read_text().startswith("## okfgit review: needs-human")  # the artifact

    # alice approves this head on GitHub; the review event runs the action again: one comment, updated; green
    (tools / "gh-calls.jsonl").unlink()
    head = git("rev-parse", "HEAD", cwd=work).out.strip()
    fake_gh.answer(tools, [
        {"prefix": reviews, "stdout": json.dumps([
            {"user": {"login": "bob", "type": "User"}, "state": "CHANGES_REQUESTED", "commit_id": head},
            {"user": {"login": "alice", "type": "User"}, "state": "COMMENTED", "commit_id": head},
            {"user": {"login": "alice", "type": "User"}, "state": "APPROVED", "commit_id": head},
            {"user": {"login": "bob", "type": "User"}, "state": "DISMISSED", "commit_id": head}])},
        {"prefix": comments, "stdout": json.dumps([{"id": 41, "body": "LGTM"}])
         + json.dumps([{"id": 99, "body": posted}])},  # two pages
    ])
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes == {"review": 0, "gate": 0} and outputs["verdict"] == "merge"
    assert not _calls(tools, "api", "--method", "POST")
    [patch] = _calls(tools, "api", "--method", "PATCH")
    assert patch["args"][3] == f"repos/{REPO}/issues/comments/99"
    updated = json.loads(patch["body"])["body"]
    assert "## okfgit review: merge" in updated
    assert f"Approved by human:alice (checked: GitHub reviews approving head {head[:12]}" in updated
    assert '"approved_by": [\n    "human:alice"\n  ]' in updated
    # the hard stop is a person's to take off: the Action never removes the label
    assert not any("--remove-label" in c["args"] for c in fake_gh.calls(tools))


@pytest.mark.parametrize("who", ["bot", "bot-login", "stale-head", "author"])
def test_an_approval_that_is_not_a_persons_approval_of_this_head_leaves_needs_human(
        tmp_path: Path, git: Runner, env: dict[str, str], who: str) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten minutes", "five minutes"))
    head = git("rev-parse", "HEAD", cwd=work).out.strip()
    earlier = git("rev-parse", "HEAD~1", cwd=work).out.strip()
    review = {
        "bot": {"user": {"login": "kb-maintainer", "type": "Bot"}, "commit_id": head},
        "bot-login": {"user": {"login": "kb-maintainer[bot]", "type": "User"}, "commit_id": head},
        "stale-head": {"user": {"login": "alice", "type": "User"}, "commit_id": earlier},
        "author": {"user": {"login": AUTHOR, "type": "User"}, "commit_id": head},
    }[who]
    reviews = f"api --paginate repos/{REPO}/pulls/7/reviews".split()
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": reviews, "stdout": json.dumps([{**review, "state": "APPROVED"}])}])
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes == {"review": 0, "gate": 1} and outputs["verdict"] == "needs-human"
    [post] = _calls(tools, "api", "--method", "POST")
    assert '"approved_by": []' in json.loads(post["body"])["body"]
    assert ["pr", "edit", "7", "--add-label", "okf-needs-human"] in [c["args"] for c in fake_gh.calls(tools)]
    assert not any("--remove-label" in c["args"] for c in fake_gh.calls(tools))


def test_request_changes_fails_the_check(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/local-setup.md", "[why](../decisions/use-postgres.md)",
                                              "[why](../decisions/gone.md)"))
    tools = fake_gh.install(tmp_path / "bin")
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes == {"review": 0, "gate": 1} and outputs["verdict"] == "request-changes"
    assert _calls(tools, "api", "--method", "POST")


def test_a_broken_checkout_posts_nothing(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten", "five"))
    git("update-ref", "-d", "refs/remotes/origin/main", cwd=work)  # a shallow clone without the base
    git("branch", "-q", "-D", "main", cwd=work)
    tools = fake_gh.install(tmp_path / "bin")
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes["review"] == 1 and "verdict" not in outputs and codes["gate"] == 1
    assert not _calls(tools, "api", "--method")


def test_the_workflow_uses_this_action_on_knowledge_changes() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "okf-review.yml").read_text())
    on = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert on["pull_request"]["paths"] == [".okf/**"] and "pull_request_review" in on
    steps = workflow["jobs"]["review"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0 and steps[-1] == {"uses": "./"}
    assert ACTION["runs"]["using"] == "composite"
    assert 'pip install --quiet "$GITHUB_ACTION_PATH"' in ACTION["runs"]["steps"][0]["run"]


def test_the_readme_pins_revisions_that_exist(git: Runner) -> None:
    readme = (ROOT / "README.md").read_text()
    [rev] = re.findall(r"^    rev: (\S+)", readme, re.M)
    found = git("cat-file", "-e", f"{rev}:.pre-commit-hooks.yaml", cwd=ROOT, expect=None)
    assert found.code == 0, f"the README's pre-commit rev {rev} is not a commit of this repository with the hook"
    assert "fetch-depth: 0" in readme.split("### Review every pull request", 1)[1]


def test_merge_only_the_head_whose_verdict_is_merge(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/local-setup.md", "run `make dev`.", "run `make dev` once."))
    head = git("rev-parse", "HEAD", cwd=work).out.strip()
    tools = fake_gh.install(tmp_path / "bin")
    # not asked to merge: nothing is merged, whatever the verdict
    codes, outputs = _run_action(work, tmp_path, env, tools, head_sha=head)
    assert outputs["verdict"] == "merge" and outputs["merged"] == "false" and not _calls(tools, "pr", "merge")
    # asked, and the pull request's head is the head okfgit reviewed: merged, pinned to that head
    codes, outputs = _run_action(work, tmp_path, env, tools, head_sha=head, merge="true", merge_method="squash")
    assert codes == {"review": 0, "gate": 0} and outputs["merged"] == "true"
    [merged] = _calls(tools, "pr", "merge")
    assert merged["args"] == ["pr", "merge", "7", "--squash", "--match-head-commit", head]
    # the author pushed after the checkout the action reviewed: that head is not merged
    (tools / "gh-calls.jsonl").unlink()
    codes, outputs = _run_action(work, tmp_path, env, tools, head_sha="f" * 40, merge="true")
    assert outputs["verdict"] == "merge" and outputs["merged"] == "false" and not _calls(tools, "pr", "merge")


def test_merge_never_follows_another_verdict(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten minutes", "five minutes"))
    head = git("rev-parse", "HEAD", cwd=work).out.strip()
    tools = fake_gh.install(tmp_path / "bin")
    codes, outputs = _run_action(work, tmp_path, env, tools, head_sha=head, merge="true")
    assert outputs["verdict"] == "needs-human" and outputs["merged"] == "false" and codes["gate"] == 1
    assert not _calls(tools, "pr", "merge")
