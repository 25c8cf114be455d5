"""Human-verified knowledge stays human: no agent changes it in place, on any write path.

A team's Decision, verified by alice, is projected into Claude Code's memory; Claude then
rewrites the memory file, in its own format or as a plain text edit. Whichever way okfgit
captures it (a person's `okfgit sync`, the post-checkout git hook, Claude's SessionEnd hook
command), the concept at HEAD stays byte for byte, the agent's words are committed as a
proposal beside it, a person is told and `okfgit status` exits 2; only a person's
`okfgit proposal accept|drop` settles it. Real repositories, the real CLI and real hooks.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from okfgit.flows.agent_hooks import COMMANDS
from okfgit.format import concept as okf
from tests.conftest import Runner, fsck, trailers_by_git
from tests.test_capture import blob, memory, split
from tests.test_hooks_e2e import BIN

DECISION = ".okf/decisions/cache-policy.md"
SIBLING = ".okf/decisions/cache-policy.needs-merge.md"
PROPOSAL = "project:decisions/cache-policy.needs-merge.md"
ALICE = "human:alice@example.com"
VERIFIED = [{"by": ALICE, "at": "2026-01-05T10:00:00Z"}]

# What Claude Code 2.1.x writes when it rewrites a memory file okfgit projected: its own keys,
# okfgit's folded away, the body replaced.
NATIVE_REWRITE = (
    b"---\n"
    b"name: cache-policy\n"
    b"description: Responses are cached for two days.\n"
    b"metadata:\n"
    b"  node_type: memory\n"
    b"  type: project\n"
    b"  originSessionId: 0b6c2f4e-7d1a-4c55-9e0b-3f1f2a9d8c11\n"
    b"---\n"
    b"Responses are cached for two days.\n"
)


def _verified_decision(project: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> Path:
    """alice's Decision, verified by her and committed by her, projected into Claude's memory."""
    okfgit("new", "cache-policy", "--type", "Decision", "--title", "Cache policy", "--description",
           "Responses are cached for one day.", "--tag", "perf", "--dir", "decisions", "--no-edit", cwd=project)
    path = project / DECISION
    path.write_bytes(okf.set_keys(path.read_bytes(), DECISION, {"verified": VERIFIED}))
    git("commit", "-q", "-am", "Verify the cache policy", cwd=project)
    okfgit("sync", cwd=project)
    return memory(project, env, project.parent / "home")


def _rewrite(mem: Path, how: str) -> bytes:
    """Claude edits the projected memory file: natively (the issue's case) or as plain text."""
    path = mem / "cache-policy.md"
    if how == "native":
        path.write_bytes(NATIVE_REWRITE)
    else:
        path.write_bytes(path.read_bytes().replace(b"cached for one day.\n", b"cached for two days.\n"))
    return path.read_bytes()


def _hook_env(env: dict[str, str]) -> dict[str, str]:
    if not os.access(os.path.join(BIN, "okfgit"), os.X_OK):
        pytest.skip(f"no okfgit script next to {BIN}")
    return {**env, "PATH": BIN + os.pathsep + env.get("PATH", os.defpath)}


def _capture_by(path: str, project: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> str:
    """Let okfgit see the edit the way ``path`` does; what it printed on stderr."""
    if path == "sync":
        result = okfgit("sync", cwd=project)
        assert result.code == 0
        return result.err
    hook_env = _hook_env(env)
    if path == "post-checkout":
        other = git("rev-parse", "other", cwd=project).out
        git("checkout", "-q", "other", cwd=project, extra_env=hook_env)  # the hook fires here
        # ... and commits onto main, the branch the agent wrote on (spec/okf-merge.md §5): back there to look
        assert git("rev-parse", "other", cwd=project).out == other
        git("checkout", "-q", "main", cwd=project, extra_env=hook_env)
        return ""
    # Claude Code's SessionEnd: its settings run this very command string in a shell
    ran = subprocess.run(["sh", "-c", COMMANDS["SessionEnd"]], cwd=project, env=hook_env, capture_output=True,
                         text=True)
    assert ran.returncode == 0, ran.stderr
    return ran.stderr


# Both edits by the sync in this process; each route a process takes (a git hook, Claude Code's
# SessionEnd) once, with one of them: what a route does with the edit is the sync's, proved above.
@pytest.mark.parametrize(("path", "edit"), [("sync", "native"), ("sync", "plain"), ("post-checkout", "plain"),
                                            ("session-end", "native")])
def test_an_agents_rewrite_of_a_verified_decision_becomes_a_proposal(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str], path: str, edit: str) -> None:
    mem = _verified_decision(project, okfgit, git, env)
    if path == "post-checkout":  # a branch with other work to check out once Claude is done
        git("checkout", "-q", "-b", "other", cwd=project)
        (project / "code.txt").write_text("work\n")
        git("add", "code.txt", cwd=project)
        git("commit", "-q", "-m", "work on other", cwd=project)
        git("checkout", "-q", "main", cwd=project)
        okfgit("hooks", "install", cwd=project)  # installed once that work is made: only the checkouts below fire
    master = blob(git, project, f"HEAD:{DECISION}")
    agent_bytes = _rewrite(mem, edit)

    err = _capture_by(path, project, okfgit, git, env)

    # the Decision at HEAD is byte for byte what alice verified
    assert blob(git, project, f"HEAD:{DECISION}") == master
    # the agent's words are kept, as the agent's, with alice's name taken off them
    meta, body = split(blob(git, project, f"HEAD:{SIBLING}"))
    assert body == split(agent_bytes)[1] and b"two days" in body
    assert "verified" not in meta and meta["generated"]["by"] == "agent:claude-code"
    assert ("Okf-Actor", "agent:claude-code") in trailers_by_git(git, project)
    assert git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split() == [SIBLING]
    # the memory file shows alice's Decision again
    assert (mem / "cache-policy.md").read_bytes() == master
    if path == "sync":
        assert (f"is verified by {ALICE} and a Decision, so no agent changes it in place" in err
                and f"`okfgit proposal accept {PROPOSAL}`" in err and f"`okfgit proposal drop {PROPOSAL}`" in err)
    status = okfgit("status", cwd=project, expect=None)
    assert status.code == 2
    assert (f"  {PROPOSAL}: an agent's version of decisions/cache-policy.md, which is verified by {ALICE} and a "
            f"Decision; accept it: `okfgit proposal accept {PROPOSAL}`; drop it: `okfgit proposal drop {PROPOSAL}`"
            in status.out)
    fsck(git, project)


def test_only_a_person_settles_it_and_accepting_a_decision_supersedes_it(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    mem = _verified_decision(project, okfgit, git, env)
    _rewrite(mem, "native")
    okfgit("sync", cwd=project)
    base = git("rev-parse", "HEAD~1", cwd=project).out.strip()
    master = blob(git, project, f"HEAD:{DECISION}")

    refused = okfgit("proposal", "accept", PROPOSAL, cwd=project, expect=None, extra_env={"CLAUDECODE": "1"})
    assert refused.code == 2 and refused.err == (
        f"okfgit: error: settling an agent's proposal for project:decisions/cache-policy.md (verified by {ALICE} and "
        "a Decision) is a person's act, and this runs as agent:claude-code; run it yourself in a terminal (or say "
        "who you are with OKF_ACTOR=human:<you>)\n")
    assert blob(git, project, f"HEAD:{DECISION}") == master

    done = okfgit("proposal", "accept", PROPOSAL, cwd=project, extra_env={"OKF_ACTOR": "human:bob@example.com"})
    assert done.out.startswith("project:decisions/cache-policy-2.md now supersedes project:decisions/cache-policy.md")
    trailers = trailers_by_git(git, project)
    assert trailers[:3] == [("Okf-Operation", "proposal"), ("Okf-Tool", trailers[1][1]),
                            ("Okf-Actor", "human:bob@example.com")]
    new, body = split(blob(git, project, "HEAD:.okf/decisions/cache-policy-2.md"))
    old, old_body = split(blob(git, project, f"HEAD:{DECISION}"))
    assert body == b"Responses are cached for two days.\n"
    assert new["type"] == "Decision" and new["supersedes"] == old["okf_id"]
    assert new["verified"][0]["by"] == "human:bob@example.com" and new["generated"]["by"] == "agent:claude-code"
    assert old["status"] == "deprecated" and old["superseded_by"] == new["okf_id"] and old["verified"] == VERIFIED
    assert old_body == split(master)[1]
    assert not (project / SIBLING).exists()
    # a team reviewing it sees a person's approval is needed, and nothing else wrong
    review = okfgit("review", f"{base}..HEAD", "--format", "json", cwd=project, expect=None)
    import json

    verdict = json.loads(review.out)
    assert verdict["verdict"] == "needs-human", verdict["findings"]
    assert {f["code"] for f in verdict["findings"]} >= {"human-reviewed-changed"}
    assert okfgit("status", cwd=project, expect=None).code == 0
    fsck(git, project)


def test_dropping_keeps_the_concept_and_a_plain_verified_note_is_accepted_in_place(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    okfgit("new", "flaky-dns", "--title", "Flaky DNS", "--description", "Retry DNS twice.", "--no-edit",
           cwd=project)
    path = project / ".okf" / "flaky-dns.md"
    path.write_bytes(okf.set_keys(path.read_bytes(), "x", {"verified": VERIFIED}))
    git("commit", "-q", "-am", "Verify", cwd=project)
    okfgit("sync", cwd=project)
    mem = memory(project, env, project.parent / "home")
    edited = (mem / "flaky-dns.md").read_bytes().replace(b"Retry DNS twice.\n", b"Retry DNS three times.\n")
    (mem / "flaky-dns.md").write_bytes(edited)
    okfgit("sync", cwd=project)
    master = blob(git, project, "HEAD:.okf/flaky-dns.md")
    assert b"three" not in master and b"three" in blob(git, project, "HEAD:.okf/flaky-dns.needs-merge.md")

    dropped = okfgit("proposal", "drop", "project:flaky-dns.needs-merge.md", cwd=project)
    assert "dropped project:flaky-dns.needs-merge.md" in dropped.out
    assert blob(git, project, "HEAD:.okf/flaky-dns.md") == master and not (project / ".okf/flaky-dns.needs-merge.md").exists()
    assert git("show", "--name-only", "--format=", "HEAD", cwd=project).out.split() == [".okf/flaky-dns.needs-merge.md"]

    (mem / "flaky-dns.md").write_bytes(edited)  # the agent insists; this time a person takes it
    okfgit("sync", cwd=project)
    # the sibling is named as any verb names a file (the one REF grammar): by a citation too, and
    # a citation of other bytes than HEAD's is refused
    oid = git("rev-parse", "HEAD:.okf/flaky-dns.needs-merge.md", cwd=project).out.strip()
    stale = okfgit("proposal", "accept", "project:flaky-dns.needs-merge.md@0000000", cwd=project, expect=2)
    assert "stale citation" in stale.err
    assert "is not a needs-merge sibling" in okfgit("proposal", "drop", "flaky-dns", cwd=project, expect=2).err
    okfgit("proposal", "accept", f"project:flaky-dns.needs-merge.md@{oid[:7]}", cwd=project)
    meta, body = split(blob(git, project, "HEAD:.okf/flaky-dns.md"))
    assert b"three times" in body and meta["okf_id"] == split(master)[0]["okf_id"]
    assert [v["by"] for v in meta["verified"]] == ["human:author@example.com"]  # the one who read these words
    fsck(git, project)


@pytest.mark.parametrize(("variable", "value", "actor"), [
    ("CLAUDECODE", "1", "agent:claude-code"),  # Claude Code 2.1.332: its Bash tool and hooks
    ("GEMINI_CLI", "1", "agent:gemini-cli"),  # Gemini CLI 0.61.0: its shell tool
    ("OPENCODE", "1", "agent:opencode"),  # opencode 1.18.33: its own process, inherited
    ("CODEX_THREAD_ID", "019a0c4e-7b2d-7f31-9c55-3e8a1d2f4b60", "agent:codex"),  # Codex 0.171.0: every command
    ("CODEX_SANDBOX", "seatbelt", "agent:codex"),  # Codex on macOS, sandboxed
    ("CODEX_SANDBOX_NETWORK_DISABLED", "1", "agent:codex"),  # Codex with the network off
])
def test_each_agents_shell_is_told_apart(variable: str, value: str, actor: str) -> None:
    from okfgit.format import actors

    assert actors.from_environment({variable: value, "USER": "someone"}) == actor
    assert actors.from_environment({variable: value, "OKF_ACTOR": "human:me"}) == "human:me"  # a person says so
    assert actors.from_environment({"USER": "someone"}) is None  # a person's own shell


def test_actors_are_truthful(project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("new", "typed", "--description", "A person typed this.", "--no-edit", cwd=project)
    assert split(blob(git, project, "HEAD:.okf/typed.md"))[0]["generated"]["by"] == "human:author@example.com"
    assert ("Okf-Actor", "human:author@example.com") in trailers_by_git(git, project)

    # a command an agent ran in its shell is the agent's, however its author is configured
    okfgit("new", "by-claude", "--description", "Claude ran this.", "--no-edit", cwd=project,
           extra_env={"CLAUDECODE": "1"})
    assert split(blob(git, project, "HEAD:.okf/by-claude.md"))[0]["generated"]["by"] == "agent:claude-code"
    assert ("Okf-Actor", "agent:claude-code") in trailers_by_git(git, project)
    okfgit("new", "by-gemini", "--description", "Gemini ran this.", "--no-edit", cwd=project,
           extra_env={"GEMINI_CLI": "1"})
    assert ("Okf-Actor", "agent:gemini-cli") in trailers_by_git(git, project)
    # Codex with full access on Linux: no sandbox variable, only its thread id
    okfgit("new", "by-codex", "--description", "Codex ran this.", "--no-edit", cwd=project,
           extra_env={"CODEX_THREAD_ID": "019a0c4e-7b2d-7f31-9c55-3e8a1d2f4b60"})
    assert ("Okf-Actor", "agent:codex") in trailers_by_git(git, project)

    # the override, and a bad one
    okfgit("new", "by-ci", "--description", "CI wrote this.", "--no-edit", cwd=project,
           extra_env={"OKF_ACTOR": "process:nightly"})
    assert split(blob(git, project, "HEAD:.okf/by-ci.md"))[0]["generated"]["by"] == "process:nightly"
    bad = okfgit("new", "bad", "--description", "x.", "--no-edit", cwd=project, expect=None,
                 extra_env={"OKF_ACTOR": "alice"})
    assert bad.code == 2 and "OKF_ACTOR must be an OKF actor" in bad.err


def test_an_agents_edit_of_a_decision_in_the_run_waits_for_a_person(
        project: Path, okfgit: Runner, git: Runner) -> None:
    okfgit("run", "start", "r1", cwd=project)
    okfgit("note", "Two cache tiers", "--type", "Decision", "--claim", "We cache in two tiers.", cwd=project)
    job = project / "runstate" / "r1" / "okf"
    note = job / "notes" / "two-cache-tiers.md"
    verified = note.read_bytes()
    note.write_bytes(okf.set_keys(verified, "x", {"verified": {"by": ALICE, "at": "2026-01-05T10:00:00Z"}}))
    git("commit", "-q", "-am", "Verify the two tiers", cwd=job)
    head = git("rev-parse", "HEAD", cwd=job).out
    edited = note.read_bytes().replace(b"two tiers.", b"three tiers.")
    note.write_bytes(edited)  # the agent working in the run edits the Decision in place

    synced = okfgit("sync", cwd=project)

    assert git("rev-parse", "HEAD", cwd=job).out == head and note.read_bytes() == edited  # nothing lost, nothing taken
    why = (f"job/r1:notes/two-cache-tiers.md (modified) waits for a person: it is verified by {ALICE} and a "
           "Decision, so sync does not commit an edit of it as an agent's")
    assert why in synced.err
    status = okfgit("status", cwd=project, expect=2)
    assert "run r1: edits waiting for a person: 1\n  modified: notes/two-cache-tiers.md: it is verified by" in status.out


def test_an_agents_memory_never_names_a_person_as_its_author_or_verifier(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str]) -> None:
    mem = memory(project, env, project.parent / "home")
    mem.mkdir(parents=True, exist_ok=True)
    (mem / "deploy.md").write_bytes(
        b"---\nname: deploy-window\ndescription: Deploys happen on Tuesdays.\n"
        b"generated:\n  by: human:alice@example.com\n  at: 2026-01-01T00:00:00Z\n"
        b"verified:\n- by: human:alice@example.com\n  at: 2026-01-01T00:00:00Z\n"
        b"metadata:\n  type: project\n---\nDeploys happen on Tuesdays.\n")
    okfgit("sync", cwd=project)
    meta, _ = split(blob(git, project, "HEAD:.okf/memory/deploy-window.md"))
    assert meta["generated"]["by"] == "agent:claude-code" and "verified" not in meta
    assert ("Okf-Actor", "agent:claude-code") in trailers_by_git(git, project)

    # an edit of the concept it became, claiming alice checked it: taken, without her name
    edited = (mem / "deploy.md").read_bytes().replace(b"okf_source:", b"verified:\n- by: human:alice@example.com\n"
                                                      b"  at: 2026-01-02T00:00:00Z\nokf_source:")
    (mem / "deploy.md").write_bytes(edited.replace(b"on Tuesdays.\n---", b"on Wednesdays.\n---")
                                    .replace(b"Deploys happen on Tuesdays.\n", b"Deploys happen on Wednesdays.\n"))
    okfgit("sync", cwd=project)
    meta, body = split(blob(git, project, "HEAD:.okf/memory/deploy-window.md"))
    assert body == b"Deploys happen on Wednesdays.\n" and "verified" not in meta


def test_only_a_person_sends_a_projects_knowledge_to_the_global_tier(
        project: Path, okfgit: Runner, git: Runner, home: Path, env: dict[str, str]) -> None:
    okfgit("init", "--scope", "global", cwd=project)
    mem = memory(project, env, home)
    mem.mkdir(parents=True)
    (mem / "port.md").write_bytes(b"---\nname: dev-port\ndescription: The dev server listens on 8443.\n---\nIt does.\n")
    refused = okfgit("capture", "--to", "global", cwd=project, expect=2, extra_env={"CLAUDECODE": "1"})
    assert "capturing --to global (read by every project here) is a person's act, and this runs as " \
        "agent:claude-code" in refused.err
    (mem / "port.md").unlink()
    okfgit("new", "dev-port", "--description", "The dev server listens on 8443.", "--no-edit", cwd=project)
    refused = okfgit("promote", "dev-port", "--from", "project", "--to", "global", cwd=project, expect=2,
                     extra_env={"CLAUDECODE": "1"})
    assert "promoting to the global tier (read by every project here, pushed to its remote) is a person's act, " \
        "and this runs as agent:claude-code" in refused.err
    assert "dev-port.md" not in git("ls-tree", "-r", "--name-only", "HEAD", cwd=home / ".local/share/okf").out
    okfgit("promote", "dev-port", "--from", "project", "--to", "global", cwd=project)  # a person's terminal
    assert ("Okf-Actor", "human:author@example.com") in trailers_by_git(git, home / ".local/share/okf")
