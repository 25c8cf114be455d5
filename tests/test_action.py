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


def _pull_request(tmp_path: Path, git: Runner, env: dict[str, str], edit: tuple[str, str, str],
                  under: str = ".okf") -> Path:
    """origin (bare) with main; a clone (so origin/HEAD exists) on ``feature``, pushed, with one
    edit of a file under ``under`` (a new file when ``old`` is empty)."""
    seed = _builder().build_base(tmp_path / "seed", env)
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin), cwd=tmp_path)
    git("push", "-q", str(origin), "main", cwd=seed)
    git("clone", "-q", str(origin), str(tmp_path / "work"), cwd=tmp_path)
    work = tmp_path / "work"
    git("checkout", "-q", "-b", "feature", cwd=work)
    path, old, new = edit
    target = work / under / path
    target.write_text(target.read_text().replace(old, new) if old else new)
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "Edit the knowledge", cwd=work)
    git("push", "-q", "--set-upstream", "origin", "feature", cwd=work)
    return work


def _event(git: Runner, work: Path, kind: str = "pull_request", action: str = "synchronize",
           body: str = "Edits the deploy guide.") -> dict:
    """The event payload GitHub gives the workflow for ``kind`` (its ``action``): the pull
    request with its number, body, base and head (both events carry it)."""
    base = git("rev-parse", "origin/main", cwd=work).out.strip()
    head = git("rev-parse", "HEAD", cwd=work).out.strip()
    event: dict = {"action": action, "pull_request": {
        "number": 7, "body": body, "base": {"ref": "main", "sha": base}, "head": {"ref": "feature", "sha": head},
        "user": {"login": AUTHOR, "type": "User"}}}
    if kind == "pull_request_review":
        event["review"] = {"state": "approved" if action == "submitted" else "dismissed", "user": {"login": "alice"}}
    return event


def _run_action(work: Path, tmp_path: Path, env: dict[str, str], tools: Path, event: dict | None = None,
                head_sha: str | None = None, **given: str) -> tuple[dict[str, int], dict[str, str]]:
    """Run action.yml's steps that have a ``run:`` (but the install: okfgit is importable here, so
    the virtualenv's python is this one) with ``${{ }}`` and ``if:`` resolved as GitHub would
    (``given``: inputs other than their defaults, with ``_`` for ``-``); return each step's exit
    code (steps skipped by their ``if:`` are left out) and the outputs of the review step (and
    the scope step's)."""
    event_file = tmp_path / "event.json"
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    event_file.write_text(json.dumps(event or {"pull_request": {
        "number": 7, "body": "Edits the deploy guide.", "base": {"ref": "main"},
        "head": {"ref": "feature", "sha": head_sha or head}, "user": {"login": AUTHOR, "type": "User"}}}))
    output = tmp_path / "github-output"
    output.write_text("")
    runner = tmp_path / "runner"
    venv_bin = runner / "okfgit-venv" / "bin"
    venv_bin.mkdir(parents=True, exist_ok=True)
    (venv_bin / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # what the install step makes
    (venv_bin / "python").chmod(0o755)
    (tools / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # the runner's own python3
    (tools / "python3").chmod(0o755)
    github = dict(env, PATH=f"{tools}{os.pathsep}{env['PATH']}", GITHUB_EVENT_PATH=str(event_file),
                  GITHUB_REPOSITORY=REPO, GITHUB_BASE_REF="main", GITHUB_HEAD_REF="feature",
                  GITHUB_WORKSPACE=str(work), GITHUB_OUTPUT=str(output), RUNNER_TEMP=str(runner),
                  GITHUB_ACTION_PATH=str(ROOT))
    inputs = {k: given.get(k.replace("-", "_"), v.get("default", "")) for k, v in ACTION["inputs"].items()}
    codes: dict[str, int] = {}
    steps: dict[str, dict[str, str]] = {}

    def value(expr: str) -> str:
        expr = expr.strip()
        if "||" in expr:
            return next((v for v in (value(part) for part in expr.split("||")) if v), "")
        if expr.startswith("inputs."):
            return "test-token" if expr == "inputs.github-token" else str(inputs[expr[7:]])
        if expr.startswith("steps."):
            _, step_id, _, name = expr.split(".")
            return steps.get(step_id, {}).get(name, "")
        raise AssertionError(f"unexpected expression {expr}")

    def resolve(text: str) -> str:
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: value(m.group(1)), str(text))

    def wanted(step: dict) -> bool:
        condition = step.get("if")
        if condition is None:
            return True
        match = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+) == '(\w+)'", condition.strip())
        assert match, f"unexpected if: {condition}"
        return steps.get(match.group(1), {}).get(match.group(2), "") == match.group(3)

    for step in ACTION["runs"]["steps"]:
        if "run" not in step or step.get("id") == "install" or not wanted(step):
            continue
        step_env = dict(github, **{k: resolve(v) for k, v in step.get("env", {}).items()})
        assert "${{" not in step["run"], "run: scripts take GitHub values through env, never pasted in"
        before = output.read_text()
        proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=step_env, capture_output=True,
                              text=True, timeout=120)
        codes[step["id"]] = proc.returncode
        print(f"step {step['id']}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}")  # shown on failure
        steps[step["id"]] = dict(line.split("=", 1) for line in output.read_text()[len(before):].splitlines()
                                 if "=" in line)
    outputs = {**steps.get("scope", {}), **steps.get("review", {})}
    outputs["verdict"] = value(ACTION["outputs"]["verdict"]["value"].strip("${} "))
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
    assert codes == {"scope": 0, "review": 0, "gate": 1} and outputs["verdict"] == "needs-human"
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
    assert codes == {"scope": 0, "review": 0, "gate": 0} and outputs["verdict"] == "merge"
    assert not _calls(tools, "api", "--method", "POST")
    [patch] = _calls(tools, "api", "--method", "PATCH")
    assert patch["args"][3] == f"repos/{REPO}/issues/comments/99"
    updated = json.loads(patch["body"])["body"]
    assert "## okfgit review: merge" in updated
    assert f"Approved by human:alice (checked: GitHub reviews approving head {head[:12]}" in updated
    assert '"approved_by": [\n    "human:alice"\n  ]' in updated
    # the hard stop is a person's to take off: the Action never removes the label
    assert not any("--remove-label" in c["args"] for c in fake_gh.calls(tools))


def test_an_approval_that_is_not_a_persons_approval_of_this_head_leaves_needs_human(
        tmp_path: Path, git: Runner, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """A bot's, a ``[bot]`` login's, one of an earlier head and the author's own: none counts
    (all four in one run: had any counted, the verdict would be merge), and each is named."""
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten minutes", "five minutes"))
    head = git("rev-parse", "HEAD", cwd=work).out.strip()
    earlier = git("rev-parse", "HEAD~1", cwd=work).out.strip()
    left_out = {
        "kb-maintainer": ({"login": "kb-maintainer", "type": "Bot"}, head, "a bot, not a person"),
        "kb-maintainer[bot]": ({"login": "kb-maintainer[bot]", "type": "User"}, head, "a bot, not a person"),
        "alice": ({"login": "alice", "type": "User"}, earlier,
                  f"it approved {earlier[:12]}, not the head under review {head[:12]}"),
        AUTHOR: ({"login": AUTHOR, "type": "User"}, head, "the pull request's author"),
    }
    reviews = f"api --paginate repos/{REPO}/pulls/7/reviews".split()
    answer = [{"user": user, "commit_id": commit, "state": "APPROVED"} for user, commit, _ in left_out.values()]
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": reviews, "stdout": json.dumps(answer)}])
    capsys.readouterr()
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes == {"scope": 0, "review": 0, "gate": 1} and outputs["verdict"] == "needs-human"
    printed = capsys.readouterr().out
    for login, (_, _, why) in left_out.items():
        assert f"okfgit review: not counted as an approval: {login} ({why})\n" in printed
    [post] = _calls(tools, "api", "--method", "POST")
    assert '"approved_by": []' in json.loads(post["body"])["body"]
    assert ["pr", "edit", "7", "--add-label", "okf-needs-human"] in [c["args"] for c in fake_gh.calls(tools)]
    assert not any("--remove-label" in c["args"] for c in fake_gh.calls(tools))


def test_request_changes_fails_the_check(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/local-setup.md", "[why](../decisions/use-postgres.md)",
                                              "[why](../decisions/gone.md)"))
    tools = fake_gh.install(tmp_path / "bin")
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes == {"scope": 0, "review": 0, "gate": 1} and outputs["verdict"] == "request-changes"
    assert _calls(tools, "api", "--method", "POST")


def test_a_broken_checkout_posts_nothing(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten", "five"))
    git("update-ref", "-d", "refs/remotes/origin/main", cwd=work)  # a shallow clone without the base
    git("branch", "-q", "-D", "main", cwd=work)
    tools = fake_gh.install(tmp_path / "bin")
    codes, outputs = _run_action(work, tmp_path, env, tools)
    assert codes["review"] == 1 and outputs["verdict"] == "" and codes["gate"] == 1
    assert not _calls(tools, "api", "--method")


def test_the_workflow_uses_this_action_on_knowledge_changes() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "okf-review.yml").read_text())
    on = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert on["pull_request"]["paths"] == [".okf/**"] and "edited" in on["pull_request"]["types"]
    assert on["pull_request_review"]["types"] == ["submitted", "dismissed"]
    # one run per pull request at a time: two at once could each post a comment
    assert workflow["concurrency"]["group"] == "okfgit-review-${{ github.event.pull_request.number }}"
    steps = workflow["jobs"]["review"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0 and steps[-1] == {"uses": "./"}
    assert ACTION["runs"]["using"] == "composite"
    # the action sets up Python and installs okfgit into a virtualenv (PEP 668), only for a knowledge change
    by_id = {step.get("id") or step.get("name"): step for step in ACTION["runs"]["steps"]}
    assert by_id["Set up Python"]["uses"].startswith("actions/setup-python@")
    assert 'python3 -m venv "$RUNNER_TEMP/okfgit-venv"' in by_id["install"]["run"]
    assert "pip install" not in by_id["install"]["run"].replace('okfgit-venv/bin/python" -m pip install', "")
    assert all(by_id[k]["if"] == "steps.scope.outputs.touches == 'true'" for k in ("Set up Python", "install",
                                                                                   "review"))
    # the README shows this workflow (with the action as <owner>/okfgit@<commit or tag>)
    readme = (ROOT / "README.md").read_text().split("A complete workflow is", 1)[1]
    shown = yaml.safe_load(re.search(r"```yaml\n(.*?)```", readme, re.S).group(1))
    shown["jobs"]["review"]["steps"][-1] = {"uses": "./"}
    assert shown == workflow


@pytest.mark.parametrize("kind, action", [("pull_request", "opened"), ("pull_request", "synchronize"),
                                          ("pull_request", "reopened"), ("pull_request_review", "submitted"),
                                          ("pull_request_review", "dismissed")])
def test_each_trigger_reviews_a_knowledge_change(kind: str, action: str, tmp_path: Path, git: Runner,
                                                 env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/local-setup.md", "[why](../decisions/use-postgres.md)",
                                              "[why](../decisions/gone.md)"))
    tools = fake_gh.install(tmp_path / "bin")
    codes, outputs = _run_action(work, tmp_path, env, tools, _event(git, work, kind, action))
    assert codes == {"scope": 0, "review": 0, "gate": 1} and outputs["verdict"] == "request-changes"
    assert outputs["touches"] == "true" and len(_calls(tools, "api", "--method", "POST")) == 1


def test_editing_the_body_runs_the_review_again_with_the_new_body(tmp_path: Path, git: Runner,
                                                                  env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten minutes", "five minutes"))
    approval = {"user": {"login": "alice", "type": "User"}, "state": "APPROVED",
                "commit_id": git("rev-parse", "HEAD", cwd=work).out.strip()}
    tools = fake_gh.install(tmp_path / "bin", [{"prefix": f"api --paginate repos/{REPO}/pulls/7/reviews".split(),
                                                "stdout": json.dumps([approval])}])
    clean = _run_action(work, tmp_path, env, tools, _event(git, work))[1]
    assert clean["verdict"] == "merge"
    claims = "```okf-harvest\n" + json.dumps({"version": 1, "concepts": [{"okf_id": "x", "path": "nope.md",
                                                                          "oid": "0" * 40}]}) + "\n```\n"
    edited = _event(git, work, "pull_request", "edited", body="Now with a harvest block.\n\n" + claims)
    codes, outputs = _run_action(work, tmp_path, env, tools, edited)
    assert outputs["verdict"] == "request-changes" and codes["gate"] == 1  # the block claims what is not there


def test_a_review_event_on_a_pull_request_without_knowledge_changes_is_left_alone(
        tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    work = _pull_request(tmp_path, git, env, ("src.py", "", "print('code, not knowledge')\n"), under="")
    tools = fake_gh.install(tmp_path / "bin")
    codes, outputs = _run_action(work, tmp_path, env, tools, _event(git, work, "pull_request_review", "submitted"))
    assert codes == {"scope": 0, "gate": 0}  # nothing set up, installed, reviewed
    assert outputs == {"touches": "false", "skipped": "skipped", "verdict": "skipped"}
    assert fake_gh.calls(tools) == []


def test_two_runs_at_once_settle_on_one_comment(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    """Without the workflow's concurrency group, two runs may both find no comment and both post:
    the newer one keeps the oldest comment, with its own text, and deletes its own."""
    work = _pull_request(tmp_path, git, env, ("guides/deploy.md", "ten minutes", "five minutes"))
    comments = f"api --paginate repos/{REPO}/issues/7/comments".split()
    other = {"id": 100, "body": "<!-- okfgit-review -->\n## okfgit review: an older run"}
    tools = fake_gh.install(tmp_path / "bin", [
        {"prefix": comments, "stdout": "[]", "once": True},  # what this run saw before posting
        {"prefix": ["api", "--method", "POST"], "stdout": json.dumps({"id": 120})},
        {"prefix": comments, "stdout": json.dumps([other, {"id": 120, "body": "<!-- okfgit-review -->\nmine"}])},
    ])
    _run_action(work, tmp_path, env, tools, _event(git, work))
    posted = json.loads(_calls(tools, "api", "--method", "POST")[0]["body"])["body"]
    [patch] = _calls(tools, "api", "--method", "PATCH")
    assert patch["args"][3] == f"repos/{REPO}/issues/comments/100" and json.loads(patch["body"])["body"] == posted
    assert [c["args"] for c in _calls(tools, "api", "--method", "DELETE")] == [
        ["api", "--method", "DELETE", f"repos/{REPO}/issues/comments/120"]]


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
    assert codes == {"scope": 0, "review": 0, "gate": 0} and outputs["merged"] == "true"
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
