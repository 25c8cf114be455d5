from __future__ import annotations

import importlib.util
import json
import os
import re
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import FIXTURES, Runner
from tests.test_local_store import damage_facts, forget_facts, kinds

REVIEW = FIXTURES / "review"
FORMATS = {"text": "txt", "markdown": "md", "json": "json"}
# Read at import: the autouse home fixture clears every OKF* variable before a test runs.
REGEN = os.environ.get("OKFGIT_REGEN_GOLDEN") == "1"
VERDICTS = {
    "clean-addition": "merge",
    "dangling-link": "request-changes",
    "human-reviewed-edit": "needs-human",
    "decision-removed": "request-changes",
    "rename": "merge",
}


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("review_fixture_build", REVIEW / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _builder()


def _stable(out: str) -> str:
    # The tool version is the only thing that changes between releases.
    return re.sub(r'"tool": "okfgit [^"]*"', '"tool": "okfgit <version>"', out)


def _golden(path: Path, actual: str) -> None:
    if REGEN:
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path} is missing; run with OKFGIT_REGEN_GOLDEN=1 to create it"
    assert actual == path.read_text(encoding="utf-8"), f"{path} differs (OKFGIT_REGEN_GOLDEN=1 regenerates)"


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("case", sorted(VERDICTS))
def test_golden_review(case: str, fmt: str, tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    repo = build.build(case, tmp_path / case, env)
    args = ["review", "main...feature", "--format", fmt]
    if (REVIEW / case / "pr-body.md").exists():
        args += ["--pr-body", str(REVIEW / case / "pr-body.md")]
    result = okfgit(*args, cwd=repo, expect=None)
    assert result.code == (0 if VERDICTS[case] == "merge" else 2), result
    assert result.err == ""
    _golden(REVIEW / case / f"expected.{FORMATS[fmt]}", _stable(result.out))
    if fmt == "markdown":
        block = result.out.rsplit("```okf-review\n", 1)[1]
        assert result.out.endswith("```\n")
        assert json.loads(block[: -len("```\n")])["verdict"] == VERDICTS[case]


def test_rename_is_matched_by_okf_id(tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    repo = build.build("rename", tmp_path / "r", env)
    data = json.loads(okfgit("review", "main...feature", "--format", "json", cwd=repo).out)
    assert data["counts"] == {"added": 0, "modified": 0, "removed": 0, "renamed": 1}
    [concept] = data["concepts"]
    assert (concept["old_path"], concept["path"]) == ("guides/local-setup.md", "guides/dev-setup.md")
    assert concept["okf_id"] == "44444444-4444-4444-8444-444444444444"


def test_default_base_is_main_and_bad_ranges_exit_2(tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    repo = build.build("dangling-link", tmp_path / "r", env)
    default = okfgit("review", "--format", "json", cwd=repo, expect=2)
    explicit = okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2)
    assert json.loads(default.out)["findings"] == json.loads(explicit.out)["findings"]
    assert json.loads(default.out)["range"] == "main...HEAD"
    bad = okfgit("review", "nope...feature", cwd=repo, expect=2)
    assert bad.out == "" and "'nope' does not resolve to a commit" in bad.err
    assert "does not resolve" in okfgit("review", "main..nope", cwd=repo, expect=2).err


def test_the_base_is_the_pull_requests_never_the_upstream(tmp_path: Path, okfgit: Runner, git: Runner,
                                                          env: dict[str, str]) -> None:
    repo = build.build("clean-addition", tmp_path / "r", env)
    remote = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(remote), cwd=tmp_path)
    git("remote", "add", "origin", str(remote), cwd=repo)
    git("push", "-q", "origin", "main", cwd=repo)
    git("push", "-q", "--set-upstream", "origin", "feature", cwd=repo)  # what promote --open-pr does
    data = json.loads(okfgit("review", "--format", "json", cwd=repo).out)
    assert data["range"] == "main...HEAD" and data["counts"]["added"] == 1
    # origin/HEAD (a clone's default branch) comes before a local main
    git("remote", "set-head", "origin", "main", cwd=repo)
    assert json.loads(okfgit("review", "--format", "json", cwd=repo).out)["range"] == "origin/main...HEAD"
    # in CI, GITHUB_BASE_REF names the pull request's base
    git("push", "-q", "origin", "main:release", cwd=repo)
    ci = okfgit("review", "--format", "json", cwd=repo, extra_env={"GITHUB_BASE_REF": "release"})
    assert json.loads(ci.out)["range"] == "origin/release...HEAD"
    gone = okfgit("review", cwd=repo, extra_env={"GITHUB_BASE_REF": "nope"}, expect=2)
    assert "neither origin/nope nor nope" in gone.err and "fetch-depth: 0" in gone.err
    # --base wins over everything
    assert json.loads(okfgit("review", "--base", "main", "--format", "json", cwd=repo,
                             extra_env={"GITHUB_BASE_REF": "nope"}).out)["range"] == "main...HEAD"
    assert "either a range or --base" in okfgit("review", "main...", "--base", "main", cwd=repo, expect=2).err


def test_an_empty_range_is_exit_2_not_merge(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = build.build("clean-addition", tmp_path / "r", env)
    for args in (["feature...feature"], ["feature..main"], ["--base", "feature"]):
        result = okfgit("review", *args, cwd=repo, expect=2)
        assert result.out == "" and "nothing to review" in result.err, result
    git("checkout", "-q", "main", cwd=repo)
    on_main = okfgit("review", cwd=repo, expect=2).err
    assert "nothing to review: main...HEAD is empty" in on_main
    assert "HEAD is main itself, the base" in on_main and "`okfgit review HEAD~1..HEAD`" in on_main


def test_json_is_spelled_as_every_other_verb_spells_it(tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    repo = build.build("clean-addition", tmp_path / "r", env)
    as_json = okfgit("review", "main...feature", "--json", cwd=repo)
    assert as_json.out == okfgit("review", "main...feature", "--format", "json", cwd=repo).out
    assert json.loads(as_json.out)["verdict"] == "merge"
    both = okfgit("review", "main...feature", "--json", "--format", "markdown", cwd=repo, expect=2)
    assert "--json and --format markdown ask for two formats" in both.err


def test_approved_by_clears_needs_human(tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    repo = build.build("human-reviewed-edit", tmp_path / "r", env)
    blocked = okfgit("review", "main...feature", cwd=repo, expect=2)
    assert "needs-human" in blocked.out and "--approved-by human:<id>" in blocked.out
    ok = okfgit("review", "main...feature", "--approved-by", "human:alice", "--approved-by", "human:bob",
                "--format", "markdown", cwd=repo, expect=0)
    assert ok.out.startswith("## okfgit review: merge\n")
    # on the command line an approval is only asserted, and says so
    assert "Approved by human:alice, human:bob (asserted with --approved-by; okfgit did not verify it)" in ok.out
    data = json.loads(ok.out.rsplit("```okf-review\n", 1)[1][: -len("```\n")])
    assert data["verdict"] == "merge" and data["approved_by"] == ["human:alice", "human:bob"]
    [finding] = data["findings"]
    assert finding["severity"] == "approved" and finding["code"] == "human-reviewed-changed"
    assert finding["message"].endswith("(approved by human:alice, human:bob, asserted)")
    text = okfgit("review", "main...feature", "--approved-by", "human:alice", cwd=repo, expect=0).out
    assert ": approved: human-reviewed-changed: " in text and "Verdict: merge. A person approved" in text
    bad = okfgit("review", "main...feature", "--approved-by", "alice", cwd=repo, expect=2)
    assert "human:<id>" in bad.err and bad.out == ""
    for other in ("agent:claude-code", "human:alice smith"):  # an agent is no person; an actor is one token
        assert "human:<id>" in okfgit("review", "main...feature", "--approved-by", other, cwd=repo, expect=2).err


def test_approval_does_not_clear_errors(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    deploy = _read(repo, "guides/deploy.md").replace("ten minutes", "[five](soak.md) minutes")
    _commit(repo, git, {"guides/deploy.md": deploy}, "Link the soak time")
    data = _review(okfgit, repo, "--approved-by", "human:alice", expect=2)
    assert data["verdict"] == "request-changes"
    assert {f["severity"] for f in data["findings"]} == {"error", "approved"}


def _commit(repo: Path, git: Runner, files: dict[str, str | None], message: str) -> None:
    for path, text in files.items():
        full = repo / ".okf" / path
        if text is None:
            git("rm", "-q", f".okf/{path}", cwd=repo)
            continue
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
        git("add", f".okf/{path}", cwd=repo)
    git("commit", "-q", "-m", message, cwd=repo)


def _review(okfgit: Runner, repo: Path, *extra: str, expect: int) -> dict:
    return json.loads(okfgit("review", "main...feature", "--format", "json", *extra, cwd=repo, expect=expect).out)


def _review_range(okfgit: Runner, repo: Path, spec: str, *extra: str, expect: int) -> dict:
    return json.loads(okfgit("review", spec, "--format", "json", *extra, cwd=repo, expect=expect).out)


def _rules(data: dict) -> list[tuple[str, str, str]]:
    return [(f["severity"], f["code"], f["file"]) for f in data["findings"]]


def _base(tmp_path: Path, env: dict[str, str]) -> Path:
    return build.build_base(tmp_path / "r", env)


def _read(repo: Path, path: str) -> str:
    return (repo / ".okf" / path).read_text()


DECISION = """---
type: Decision
title: {title}
description: {description}
scope: project
okf_id: {okf_id}
okf_source: authored
{extra}---

# {title}

{description}
"""


def test_explicit_supersession_merges(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    new = DECISION.format(title="Use CockroachDB", description="All services store state in CockroachDB.",
                          okf_id="77777777-7777-4777-8777-777777777777",
                          extra="supersedes: 11111111-1111-4111-8111-111111111111\n")
    old = _read(repo, "decisions/use-postgres.md").replace(
        "okf_source: authored\n",
        "okf_source: authored\nstatus: deprecated\nsuperseded_by: 77777777-7777-4777-8777-777777777777\n")
    index = _read(repo, "decisions/index.md").replace(
        "- [Trunk", "- [Use CockroachDB](use-cockroach.md) \u2014 All services store state in CockroachDB.\n- [Trunk")
    _commit(repo, git, {"decisions/use-cockroach.md": new, "decisions/use-postgres.md": old,
                        "decisions/index.md": index}, "Supersede the Postgres decision")
    data = _review(okfgit, repo, expect=0)
    assert data["verdict"] == "merge", data["findings"]
    fields = {f["key"]: f for f in data["concepts"][1]["fields"]}
    assert fields["status"] == {"key": "status", "change": "added", "old": None, "new": "deprecated"}


def test_half_done_supersession_and_rewrite(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    new = DECISION.format(title="Use CockroachDB", description="All services store state in CockroachDB.",
                          okf_id="77777777-7777-4777-8777-777777777777",
                          extra="supersedes: decisions/use-postgres.md\n")
    rewritten = _read(repo, "decisions/trunk-based.md").replace("at least daily", "weekly")
    index = _read(repo, "decisions/index.md").replace("at least daily", "weekly").replace(
        "- [Trunk", "- [Use CockroachDB](use-cockroach.md) \u2014 All services store state in CockroachDB.\n- [Trunk")
    _commit(repo, git, {"decisions/use-cockroach.md": new, "decisions/trunk-based.md": rewritten,
                        "decisions/index.md": index}, "Change two decisions")
    data = _review(okfgit, repo, expect=2)
    assert data["verdict"] == "request-changes"
    assert _rules(data) == [("error", "decision-rewritten", "decisions/trunk-based.md"),
                            ("error", "supersession", "decisions/use-cockroach.md")]
    assert data["findings"][1]["message"] == ("supersedes decisions/use-postgres.md, which needs status: deprecated "
                                              "and superseded_by: 77777777-7777-4777-8777-777777777777")


def test_human_reviewed_removed_needs_human(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    index = "\n".join(line for line in _read(repo, "guides/index.md").split("\n") if "deploy.md" not in line)
    _commit(repo, git, {"guides/deploy.md": None, "guides/index.md": index}, "Remove the deploy guide")
    data = _review(okfgit, repo, expect=2)
    assert _rules(data) == [("needs-human", "human-reviewed-removed", "guides/deploy.md")]
    assert data["verdict"] == "needs-human"


def test_errors_outrank_needs_human(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    deploy = _read(repo, "guides/deploy.md").replace("ten minutes", "[five](soak.md) minutes")
    _commit(repo, git, {"guides/deploy.md": deploy}, "Link the soak time")
    data = _review(okfgit, repo, expect=2)
    assert data["verdict"] == "request-changes"
    assert {r for _, r, _ in _rules(data)} == {"dangling-link", "human-reviewed-changed"}


def test_needs_merge_sibling_blocks(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    sibling = _read(repo, "guides/local-setup.md").replace("fifteen", "ten")
    _commit(repo, git, {"guides/local-setup.needs-merge.md": sibling}, "okf: capture with a conflict")
    data = _review(okfgit, repo, expect=2)
    assert ("error", "needs-merge", "guides/local-setup.needs-merge.md") in _rules(data)


def test_duplicate_title_and_okf_id(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    twin = _read(repo, "guides/local-setup.md").replace("fifteen", "ten")
    index = _read(repo, "guides/index.md") + \
        "- [Local setup](local-setup-2.md) \u2014 Getting a development machine ready in ten minutes.\n"
    _commit(repo, git, {"guides/local-setup-2.md": twin, "guides/index.md": index}, "Copy the setup guide")
    rules = {(r, p) for _, r, p in _rules(_review(okfgit, repo, expect=2))}
    assert ("duplicate-title", "guides/local-setup-2.md") in rules
    assert ("duplicate-okf-id", "guides/local-setup-2.md") in rules


def test_findings_already_on_the_base_do_not_count(tmp_path: Path, okfgit: Runner, git: Runner,
                                                   env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    git("checkout", "-q", "main", cwd=repo)
    broken = _read(repo, "guides/local-setup.md").replace("[why](../decisions/use-postgres.md)", "[why](gone.md)")
    _commit(repo, git, {"guides/local-setup.md": broken}, "A broken link on main")
    git("checkout", "-q", "-B", "feature", cwd=repo)
    new = DECISION.format(title="Use UTC", description="Servers and logs use UTC.",
                          okf_id="88888888-8888-4888-8888-888888888888", extra="")
    index = _read(repo, "decisions/index.md") + "- [Use UTC](use-utc.md) — Servers and logs use UTC.\n"
    touched = broken + "\nOne more line.\n"  # the branch edits the file, leaving its broken link as it was
    _commit(repo, git, {"decisions/use-utc.md": new, "decisions/index.md": index, "guides/local-setup.md": touched},
            "Decide on UTC")
    data = _review(okfgit, repo, expect=0)
    assert data["verdict"] == "merge" and data["preexisting_findings"] == 1


def test_pr_body_problems_are_findings(tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    repo = build.build("clean-addition", tmp_path / "r", env)
    good = (REVIEW / "clean-addition" / "pr-body.md").read_text()
    wrong = tmp_path / "wrong.md"
    wrong.write_text(good.replace("80c5c7185fcab90e77771c8c2943b88eff5b0909", "0" * 40))
    data = _review(okfgit, repo, "--pr-body", str(wrong), expect=2)
    [finding] = data["findings"]
    assert finding["code"] == "harvest-mismatch" and finding["file"] == "lessons/warm-cache.md"
    assert "the tree at the head has 80c5c7185fcab90e77771c8c2943b88eff5b0909" in finding["message"]
    invalid = tmp_path / "invalid.md"
    invalid.write_text("Harvest\n\n```okf-harvest\n{\"version\": 1,\n```\n")
    data = _review(okfgit, repo, "--pr-body", str(invalid), expect=2)
    assert _rules(data) == [("error", "harvest-block", "--pr-body")]
    assert data["findings"][0]["message"].startswith("okf-harvest block is not valid JSON: ")
    missing = tmp_path / "missing.md"
    missing.write_text(good.replace("lessons/warm-cache.md\", \"oid", "lessons/cold.md\", \"oid"))
    data = _review(okfgit, repo, "--pr-body", str(missing), expect=2)
    assert data["findings"][0]["message"] == "the okf-harvest block claims lessons/cold.md, which is not in the tree at the head"
    stdin = okfgit("review", "main...feature", "--pr-body", "-", cwd=repo, input=good)
    assert "every claim matches the head tree" in stdin.out
    latin = tmp_path / "latin.md"
    latin.write_bytes(good.encode() + "Caf\u00e9\n".encode("latin-1"))
    refused = okfgit("review", "main...feature", "--pr-body", str(latin), cwd=repo, expect=2)
    assert f"Invalid value for '--pr-body': {latin} is not UTF-8 text" in refused.err and refused.out == ""


def test_pr_body_block_fences_are_read_as_commonmark(tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    """An indented or longer fence (a person re-fenced the block, a tool quoted it) is still the
    block; a block indented four spaces is indented code, not a fence, so there is none."""
    repo = build.build("clean-addition", tmp_path / "r", env)
    good = (REVIEW / "clean-addition" / "pr-body.md").read_text()
    assert "\n```okf-harvest\n" in good
    head, rest = good.split("```okf-harvest\n", 1)
    block, tail = rest.split("\n```", 1)
    longer = tmp_path / "longer.md"
    longer.write_text(head + "  `````okf-harvest  \n" + "\n".join("  " + line for line in block.split("\n"))
                      + "\n```\n   ``````" + tail)  # a shorter run inside is content; the longer one closes
    assert _review(okfgit, repo, "--pr-body", str(longer), expect=2)["findings"][0]["message"].startswith(
        "okf-harvest block is not valid JSON")  # the ``` line is content: the block is JSON plus a ``` line
    longer.write_text(head + "  `````okf-harvest  \n" + "\n".join("  " + line for line in block.split("\n"))
                      + "\n   ``````" + tail)
    data = _review(okfgit, repo, "--pr-body", str(longer), expect=0)
    assert data["verdict"] == "merge" and data["harvest"]["concepts"][0]["path"] == "lessons/warm-cache.md"
    indented = tmp_path / "indented.md"
    indented.write_text(head + "    ```okf-harvest\n" + "\n".join("    " + line for line in block.split("\n"))
                        + "\n    ```" + tail)
    data = _review(okfgit, repo, "--pr-body", str(indented), expect=0)
    assert _rules(data) == [("warning", "harvest-block", "--pr-body")]


def test_review_reads_trees_not_the_working_tree(tmp_path: Path, okfgit: Runner, env: dict[str, str]) -> None:
    repo = build.build("rename", tmp_path / "r", env)
    (repo / ".okf" / "guides" / "dev-setup.md").write_text("---\n: broken yaml [\n---\n")
    assert okfgit("review", "main...feature", "--format", "json", cwd=repo).code == 0


def test_pre_commit_hook_manifest_runs_doctor_on_the_worktree(tmp_path: Path, okfgit: Runner,
                                                              env: dict[str, str]) -> None:
    import shlex

    import yaml

    [hook] = yaml.safe_load((FIXTURES.parent / ".pre-commit-hooks.yaml").read_text())
    assert {k: hook[k] for k in ("id", "language", "pass_filenames", "files")} == {
        "id": "okfgit-doctor", "language": "python", "pass_filenames": False, "files": r"^\.okf/"}
    argv = shlex.split(hook["entry"])
    assert argv[0] == "okfgit"
    repo = build.build("rename", tmp_path / "ok", env)
    assert okfgit(*argv[1:], cwd=repo).code == 0
    (repo / ".okf" / "guides" / "dev-setup.md").write_text("no frontmatter\n")  # what is being committed
    assert "frontmatter-missing" in okfgit(*argv[1:], cwd=repo, expect=2).out


def test_default_base_falls_back_to_master(tmp_path: Path, okfgit: Runner, git: Runner) -> None:
    repo = tmp_path / "old-style"
    repo.mkdir()
    git("init", "-q", "-b", "master", cwd=repo)
    okfgit("init", "--scope", "project", cwd=repo)
    git("checkout", "-q", "-b", "topic", cwd=repo)
    okfgit("new", "x", "--description", "X.", "--no-edit", cwd=repo)
    result = okfgit("review", cwd=repo)
    assert "master...HEAD" in result.out and "merge" in result.out


# -- the gaps a maintainer found on real pull requests ------------------------------------


def _supersede(repo: Path, git: Runner, old_text: str) -> None:
    new = DECISION.format(title="Use CockroachDB", description="All services store state in CockroachDB.",
                          okf_id="77777777-7777-4777-8777-777777777777",
                          extra="supersedes: 11111111-1111-4111-8111-111111111111\n")
    index = _read(repo, "decisions/index.md").replace(
        "- [Trunk", "- [Use CockroachDB](use-cockroach.md) \u2014 All services store state in CockroachDB.\n- [Trunk")
    if "description: All services store their state in one Postgres cluster." not in old_text:
        index = index.replace("All services store their state in one Postgres cluster.", "Superseded.")
    _commit(repo, git, {"decisions/use-cockroach.md": new, "decisions/use-postgres.md": old_text,
                        "decisions/index.md": index}, "Supersede the Postgres decision")


def test_a_supersession_cannot_rewrite_history(tmp_path: Path, okfgit: Runner, git: Runner,
                                               env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    old = _read(repo, "decisions/use-postgres.md").replace(
        "okf_source: authored\n",
        "okf_source: authored\nstatus: deprecated\nsuperseded_by: 77777777-7777-4777-8777-777777777777\n")
    rewritten = old.replace("description: All services store their state in one Postgres cluster.",
                            "description: Superseded.").replace("One backup story", "It was a mistake")
    _supersede(repo, git, rewritten)
    data = _review(okfgit, repo, expect=2)
    assert _rules(data) == [("error", "decision-rewritten", "decisions/use-postgres.md")]
    message = data["findings"][0]["message"]
    assert "rewrites description, the body" in message and "status, superseded_by, stale_after" in message


def test_harvest_claims_must_cover_the_pull_request(tmp_path: Path, okfgit: Runner, git: Runner,
                                                    env: dict[str, str]) -> None:
    repo = build.build("clean-addition", tmp_path / "r", env)
    good = (REVIEW / "clean-addition" / "pr-body.md").read_text()
    body = tmp_path / "body.md"
    body.write_text(good)
    assert _review(okfgit, repo, "--pr-body", str(body), expect=0)["verdict"] == "merge"
    # a second concept the block does not claim
    extra = DECISION.format(title="Use UTC", description="Servers and logs use UTC.",
                            okf_id="88888888-8888-4888-8888-888888888888", extra="")
    index = _read(repo, "decisions/index.md") + "- [Use UTC](use-utc.md) \u2014 Servers and logs use UTC.\n"
    _commit(repo, git, {"decisions/use-utc.md": extra, "decisions/index.md": index}, "Decide on UTC")
    data = _review(okfgit, repo, "--pr-body", str(body), expect=2)
    assert _rules(data) == [("error", "harvest-unclaimed", "decisions/use-utc.md")]
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo)
    lies = {
        "destination.commit": good.replace('"commit": "cb1e4c8c', '"commit": "0000000c'),
        "source.commit": good.replace("0123456789abcdef0123456789abcdef01234567", "f" * 40),
    }
    for what, text in lies.items():
        body.write_text(text)
        [finding] = _review(okfgit, repo, "--pr-body", str(body), expect=2)["findings"]
        assert finding["code"] == "harvest-mismatch" and what in finding["message"], finding
    body.write_text(good)
    data = json.loads(okfgit("review", "main...feature", "--format", "json", "--pr-body", str(body), cwd=repo,
                             extra_env={"GITHUB_HEAD_REF": "okf/other"}, expect=2).out)
    assert "destination.branch 'feature' is not this pull request's branch 'okf/other'" in \
        data["findings"][0]["message"]
    git("branch", "-q", "-m", "feature", "okf/renamed", cwd=repo)  # locally: the head side's branch
    data = _review_range(okfgit, repo, "main...okf/renamed", "--pr-body", str(body), expect=2)
    assert "is not this pull request's branch 'okf/renamed'" in data["findings"][0]["message"]
    git("branch", "-q", "-m", "okf/renamed", "feature", cwd=repo)
    body.write_text(good + "\n" + good.split("\n\n", 1)[1])  # a second, lying block
    data = _review(okfgit, repo, "--pr-body", str(body), expect=2)
    assert ("error", "harvest-block", "--pr-body") in _rules(data)
    assert "has 2 okf-harvest blocks" in data["findings"][0]["message"]


def test_changes_that_need_a_person(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    git("checkout", "-q", "main", cwd=repo)
    _commit(repo, git, {"okfgit.toml": "[capture]\nenabled = false\n"}, "Opt out of capture")
    git("checkout", "-q", "-B", "feature", cwd=repo)
    verified = _read(repo, "guides/local-setup.md").replace(
        "okf_source: authored\n", "okf_source: authored\nverified: {by: 'human:alice', at: '2025-11-01T00:00:00Z'}\n")
    _commit(repo, git, {"okfgit.toml": None, "guides/local-setup.md": verified}, "Drop the opt-out, verify a guide")
    data = _review(okfgit, repo, expect=2)
    assert data["verdict"] == "needs-human"
    assert _rules(data) == [("needs-human", "verified-changed", "guides/local-setup.md"),
                            ("needs-human", "settings-changed", "okfgit.toml")]
    approved = _review(okfgit, repo, "--approved-by", "human:carol", expect=0)
    assert {f["severity"] for f in approved["findings"]} == {"approved"}


def test_doctor_follows_links_into_unchanged_concepts(tmp_path: Path, okfgit: Runner, git: Runner,
                                                      env: dict[str, str]) -> None:
    # Review checks the changed files and their neighbours only: an unchanged concept that
    # linked to a removed one is still named, with doctor's cache warm from main.
    repo = _base(tmp_path, env)
    git("checkout", "-q", "main", cwd=repo)
    okfgit("doctor", cwd=repo)
    git("checkout", "-q", "-B", "feature", cwd=repo)
    index = "".join(line for line in _read(repo, "decisions/index.md").splitlines(keepends=True)
                    if "use-postgres.md" not in line)
    _commit(repo, git, {"decisions/use-postgres.md": None, "decisions/index.md": index}, "Drop a decision")
    data = _review(okfgit, repo, expect=2)
    assert ("error", "dangling-link", "guides/local-setup.md") in _rules(data)


# -- the cost follows the change: what review reads of the tree, and its cache ------------------

UUID = "{0}{0}{0}{0}{0}{0}{0}{0}-{0}{0}{0}{0}-4{0}{0}{0}-8{0}{0}{0}-{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}{0}"


def _concept(title: str, okf_id: str, body: str = "", extra: str = "") -> str:
    return (f"---\ntype: Guide\ntitle: {title}\ndescription: About {title.lower()}.\nscope: project\n"
            f"okf_id: {okf_id}\nokf_source: authored\n{extra}---\n\n# {title}\n\n{body}\n")


def _index(title: str, entries: list[tuple[str, str, str]], intro: str = "") -> str:
    lines = [f"- [{t}]({p}) \u2014 {d}" for t, p, d in entries]
    return f"# {title}\n\n{intro}" + "\n".join(lines) + "\n"


def _tricky_kb(tmp_path: Path, git: Runner) -> Path:
    """A KB whose findings about a change depend on files far from it: an okf_id shared with a
    concept in another folder, a superseded_by and a [[name]] naming one, links to folders, an
    index entry for another folder's concept, an index reached only through a folder that is not
    its parent, a symlink; then a feature branch changing things in three folders."""
    repo = tmp_path / "kb"
    files = {
        "index.md": '---\nokf_version: "0.2"\n---\n\n' + _index("Knowledge", [
            ("alpha", "alpha/index.md", "Alpha things."), ("beta", "beta/index.md", "Beta things."),
            ("gamma", "gamma/index.md", "Gamma things."), ("epsilon", "epsilon/index.md", "Epsilon things.")]),
        "alpha/index.md": _index("Alpha", [("One", "one.md", "About one."), ("Quiet", "quiet.md", "About quiet."),
                                           ("Two", "two.md", "About two.")]),
        "alpha/quiet.md": _concept("Quiet", UUID.format(8)),
        "alpha/link.md": "one.md",  # the very bytes of the symlink that replaces it: one blob OID
        "alpha/unlisted.md": _concept("Unlisted", UUID.format(9)),
        "alpha/notes.md/inner.md": _concept("Inner", UUID.format("a")),
        "alpha/one.md": _concept("One", UUID.format(1), "See [far](../beta/far.md)."),
        "alpha/two.md": _concept("Two", UUID.format(2)),
        "beta/index.md": _index("Beta", [("Far", "far.md", "About far."),
                                         ("Three", "../gamma/three.md", "About three.")]),
        "beta/far.md": _concept("Far", UUID.format(3), "Plain.", "name: far-away\n"),
        "gamma/index.md": _index("Gamma", [("Three", "three.md", "About three.")],
                                 "The [delta notes](../delta/index.md) hang from here.\n\n"),
        "gamma/three.md": _concept("Three", UUID.format(4)),
        "delta/index.md": _index("Delta", [("Deep", "deep.md", "About deep.")]),
        "delta/deep.md": _concept("Deep", UUID.format(5)),
        "epsilon/index.md": _index("Epsilon", [("Named", "named.md", "About named."),
                                               ("Next", "next.md", "About next.")]),
        "epsilon/next.md": _concept("Next", UUID.format(7)),
        "epsilon/named.md": _concept("Named", UUID.format(6), "Far from everything.", "name: the-named-one\n"),
    }
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    for path, text in files.items():
        (repo / ".okf" / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / ".okf" / path).write_text(text)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "A knowledge base", cwd=repo)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    (repo / ".okf" / "alpha" / "link.md").unlink()
    (repo / ".okf" / "alpha" / "link.md").symlink_to("one.md")
    _commit(repo, git, {
        "alpha/new.md": _concept("New", UUID.format(4), "Like [[far-away]] and [[the-named-one]], not [[nothing]]; "
                                 "see [b](../beta/), [g](../gamma), [gone](../beta/gone.md), [notes](notes.md), "
                                 "[link](link.md) and [two](two.md).",
                                 f"superseded_by: {UUID.format(7)}\n"),
        "alpha/index.md": _index("Alpha", [("New", "new.md", "About new."), ("One", "one.md", "About one."),
                                           ("Hushed", "quiet.md", "About quiet."), ("Two", "two.md", "About two.")]),
        "beta/far.md": _concept("Far", UUID.format(3), "Plain, and [new](../alpha/new.md).", "name: far-away\n"),
        "delta/deep.md": _concept("Deep", UUID.format(5), "Deeper."),
        "gamma/three.md": _concept("Three", UUID.format(4), "Now [lost](missing.md)."),
    }, "Change three folders")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "A symlink", cwd=repo)
    return repo


def _rows(findings: list) -> list[tuple]:
    return sorted((f.code, f.severity, f.file, f.message, f.line or 0, f.group) for f in findings)


@pytest.mark.parametrize("warm", [True, False])
def test_doctor_on_what_a_change_reaches_finds_what_the_whole_tree_would(tmp_path: Path, git: Runner,
                                                                          okfgit: Runner, warm: bool) -> None:
    # Review reads the tree path by path and checks only the concepts its findings involve;
    # for any set of files, that finds exactly what doctor on the whole tree finds about them.
    # warm: doctor's facts (stored at main's tree) are where review starts from.
    import datetime as dt

    from okfgit.format import markdown as links
    from okfgit.git.repository import Repo
    from okfgit.knowledge.snapshot import snapshot
    from okfgit.knowledge.tiers import Tier
    from okfgit.verbs import review
    from okfgit.knowledge import checks

    repo = _tricky_kb(tmp_path, git)
    git("checkout", "-q", "main", cwd=repo)
    okfgit("doctor", cwd=repo, expect=None)  # doctor's facts, stored at main's tree, seed review's
    git("checkout", "-q", "feature", cwd=repo)
    if not warm:
        forget_facts(repo / ".git")
    tier = Tier("project", repo, ".okf")
    raw = Repo.open(repo)
    today = dt.date(2026, 1, 1)
    base, head = raw.resolve("main"), raw.resolve("feature")
    graph = review.Graph(tier, raw)
    old, new = review.Side(graph, base), review.Side(graph, head, keep=True)
    changes = review.diff_concepts(old, new, review.changed_paths(old, new))
    scope = review._scope(changes, review._other_files(review.changed_paths(old, new)), new)
    assert {"alpha/new.md", "beta/far.md", "alpha/two.md", "gamma/index.md", "alpha/link.md"} <= scope
    everything = set(raw.tree_entries(base, ".okf")) | set(raw.tree_entries(head, ".okf"))
    for only in (scope, everything, {"alpha/new.md"}, {"delta/index.md", "gamma/three.md"}):
        for side, commit in ((new, head), (old, base)):
            whole = checks.check_snapshot(snapshot(tier, commit), today, only=set(only)).findings
            assert _rows(side.doctor(set(only), today)) == _rows(whole), (only, commit)
    found = {(f.code, f.file) for f in new.doctor(scope, today)}
    assert {("duplicate-okf-id", "alpha/new.md"), ("dangling-wiki-link", "alpha/new.md"),
            ("dangling-link", "alpha/new.md"), ("index-entry-stale", "alpha/index.md"),
            ("symlink", "alpha/link.md"), ("index-omission", "alpha/index.md")} <= found
    assert ("superseded-by-dangling", "alpha/new.md") not in found  # it names epsilon/next.md's okf_id
    assert "epsilon/index.md" not in scope
    # linked_from, against every concept's links read from the whole tree
    facts = checks.checked_facts(snapshot(tier, head))
    readable = [(p, f) for p, f in sorted(facts.items()) if f.readable and f.has_frontmatter]
    names = links.wiki_names((p, f.name) for p, f in readable)
    for change in changes:
        expected = {p for p, f in readable for kind, target, *_ in f.links
                    if (names.get(target) if kind == "wiki" else links.resolve(p, target).path) == change.path}
        assert change.linked_from == tuple(sorted(expected - {change.path})), change.path
    assert {c.path: c.linked_from for c in changes}["beta/far.md"] == ("alpha/new.md", "alpha/one.md")


def test_review_is_the_same_with_doctors_facts_cold_warm_stale_or_damaged(tmp_path: Path, git: Runner,
                                                                          okfgit: Runner) -> None:
    # Doctor's facts are stored for a tree and updated from a tree diff: they can save review
    # work, never change an answer, whatever tree they were left at.
    repo = _tricky_kb(tmp_path, git)
    common = repo / ".git"
    first = okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2).out
    assert ("doctor", "project") in kinds(common)
    assert okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2).out == first
    damage_facts(common, "doctor")
    assert okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2).out == first
    forget_facts(common)
    okfgit("doctor", cwd=repo, expect=None)
    assert okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2).out == first
    # The store now holds the feature's tree; a new commit links an unchanged concept to a
    # changed one and gives another an okf_id already taken: both are seen.
    _commit(repo, git, {"delta/deep.md": _concept("Deep", UUID.format(2), "Deeper, like [new](../alpha/new.md)."),
                        "beta/far.md": _concept("Far", UUID.format(3), "Plain.", "name: far-away\n")}, "More")
    data = json.loads(okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2).out)
    linked = {c["path"]: c["linked_from"] for c in data["concepts"]}
    assert linked["alpha/new.md"] == ["delta/deep.md"]
    assert ("error", "duplicate-okf-id", "delta/deep.md") in _rules(data)
    assert ("error", "duplicate-okf-id", "alpha/two.md") in _rules(data)  # alpha/new.md links to it
    # A cache left at a tree that no longer exists (a branch deleted, then pruned) is read afresh.
    git("checkout", "-q", "-b", "gone", cwd=repo)
    _commit(repo, git, {"gamma/three.md": _concept("Three", UUID.format(9))}, "Soon gone")
    okfgit("review", "main...gone", "--format", "json", cwd=repo, expect=2)
    git("checkout", "-q", "feature", cwd=repo)
    git("branch", "-q", "-D", "gone", cwd=repo)
    git("reflog", "expire", "--expire=now", "--all", cwd=repo)
    git("gc", "-q", "--prune=now", cwd=repo)
    again = json.loads(okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2).out)
    forget_facts(common)
    assert json.loads(okfgit("review", "main...feature", "--format", "json", cwd=repo, expect=2).out) == again
    assert again == data


def test_a_first_review_in_a_clone_tells_of_its_progress(tmp_path: Path, git: Runner, env: dict[str, str]) -> None:
    # With no facts stored yet, review reads every markdown file once: a long loop at size, so it
    # tells the context's progress (a counter on a terminal's stderr, as doctor's first run does).
    from okfgit.context import Context
    from okfgit.knowledge.tiers import Workspace
    from okfgit.verbs import review

    repo = _tricky_kb(tmp_path, git)
    told: list[tuple[str, int, int]] = []
    ctx = Context(env, repo, progress=lambda what, done, total: told.append((what, done, total)))
    result = review.review(ctx, Workspace(ctx, repo, None), "main...feature")
    assert result.verdict == "request-changes"
    assert {what for what, _, _ in told} == {"reading project concepts"}
    files = git("ls-tree", "-r", "--name-only", "feature", ".okf", cwd=repo).out.split()
    assert (n := sum(1 for f in files if f.endswith(".md"))) > 12  # 12 concepts, their indexes, the log
    assert (n, n) in {(done, total) for _, done, total in told}  # each of the head's read once


def test_a_tree_looked_up_path_by_path_answers_as_the_walked_tree(tmp_path: Path, git: Runner) -> None:
    from okfgit.git.repository import Repo
    from okfgit.knowledge.snapshot import TreeEntries

    repo = _tricky_kb(tmp_path, git)
    raw = Repo.open(repo)
    head = raw.resolve("feature")
    whole = raw.tree_entries(head, ".okf")
    odd = ["", "alpha", "alpha/", "alpha/notes.md", "/alpha/one.md", "alpha//one.md", "alpha/./one.md",
           "alpha/../alpha/one.md", "nope/one.md", "alpha/one.md/x", "index.md/"]
    lazy = TreeEntries(raw, head, ".okf", raw.tree_oid(head, ".okf"))
    for path in [*whole, *odd]:
        assert (path in lazy, lazy.get(path)) == (path in whole, whole.get(path)), path
    assert lazy.copy() == whole and dict(lazy.items()) == whole and sorted(lazy) == sorted(whole)


def test_a_log_is_append_only(tmp_path: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    repo = _base(tmp_path, env)
    log = "# Project log\n\n## 2026-01-05\n- **Decision**: cache for one day.\n  Measured on staging.\n"
    _commit(repo, git, {"log.md": log}, "Start a log")
    start = git("rev-parse", "HEAD", cwd=repo).out.strip()
    added = log.replace("## 2026-01-05\n", "## 2026-01-06\n- Cache hit rate is 80%.\n\n## 2026-01-05\n")
    _commit(repo, git, {"log.md": added}, "Log a measurement")
    appended = _review_range(okfgit, repo, f"{start}..HEAD", expect=0)
    assert appended["verdict"] == "merge" and appended["findings"] == []

    edited = added.replace("  Measured on staging.", "  Measured in production.")
    _commit(repo, git, {"log.md": edited}, "Fix the log")
    data = _review_range(okfgit, repo, f"{start}..HEAD", expect=2)
    assert data["verdict"] == "request-changes"
    [finding] = [f for f in data["findings"] if f["code"] == "log-rewritten"]
    assert finding["severity"] == "error" and finding["file"] == "log.md"
    assert "'- **Decision**: cache for one day.' of 2026-01-05" in finding["message"]

    (repo / ".okf" / "log.md").write_bytes(added.encode() + "- Caf\u00e9 opened.\n".encode("latin-1"))
    git("commit", "-qam", "A log in another encoding", cwd=repo)
    unreadable = _review_range(okfgit, repo, f"{start}..HEAD", expect=2)
    [finding] = [f for f in unreadable["findings"] if f["code"] == "log-rewritten"]
    assert "a log okfgit cannot read as text (log.md: not UTF-8" in finding["message"]

    _commit(repo, git, {"log.md": None}, "Drop the log")
    removed = _review_range(okfgit, repo, f"{start}..HEAD", expect=2)
    assert [f["code"] for f in removed["findings"] if f["severity"] == "error"] == ["log-rewritten"]


def test_a_maintainers_amend_or_close_is_recorded_over_the_checks(tmp_path: Path, okfgit: Runner,
                                                                  env: dict[str, str]) -> None:
    repo = build.build("clean-addition", tmp_path / "r", env)
    for outcome in ("amend", "close"):
        out = okfgit("review", "main...feature", "--format", "markdown", "--verdict", outcome, cwd=repo, expect=2).out
        assert out.startswith(f"## okfgit review: {outcome}\n")
        data = json.loads(out.rsplit("```okf-review\n", 1)[1][: -len("```\n")])
        assert data["verdict"] == outcome and data["outcome"] == {"verdict": outcome, "checks": "merge"}
        assert "(The checks alone say merge.)" in out
    text = okfgit("review", "main...feature", "--verdict", "close", cwd=repo, expect=2).out
    assert text.rstrip().endswith("Verdict: close. The maintainer closes this pull request: its knowledge changes are "
                                  "not merged. (The checks alone say merge.)")
    # merge, request-changes and needs-human come from the checks, never from a flag
    assert "Invalid value for '--verdict'" in okfgit("review", "--verdict", "merge", cwd=repo, expect=2).err
    assert "outcome" not in json.loads(okfgit("review", "main...feature", "--format", "json", cwd=repo).out)
