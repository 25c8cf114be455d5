"""Near-duplicates: one fact said twice is caught at capture, in review and by doctor, and real,
unrelated concepts are not taken for one another."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from okfgit.format import concept as okf
from okfgit.format import similar
from okfgit.knowledge.similar import Index, signature_of
from okfgit.git.objects import FILE_MODE, Entry
from tests.conftest import FIXTURES, Runner, fsck, trailers_by_git
from tests.test_capture import memory, write_memory

DECISION = "Responses are cached for one day at the edge."
MEMORY = (b"---\nname: edge-cache-ttl\ndescription: Edge responses are cached for 1 day.\nmetadata:\n"
          b"  type: project\n  node_type: memory\n---\nEdge responses are cached for 1 day.\n\n"
          b"**Why:** the CDN keeps them; a deploy shows up a day later at most.\n")


def _decision(project: Path, okfgit: Runner) -> None:
    okfgit("new", "edge-caching", "--type", "Decision", "--title", "Cache responses at the edge",
           "--description", DECISION, "--dir", "decisions", "--no-edit", cwd=project)


def test_a_memory_repeating_a_decision_becomes_a_proposal_beside_it(project: Path, okfgit: Runner, git: Runner,
                                                                     env: dict[str, str], home: Path) -> None:
    _decision(project, okfgit)
    decision = okf.split((project / ".okf" / "decisions" / "edge-caching.md").read_bytes(), "d").meta
    folder = memory(project, env, home)
    okfgit("sync", cwd=project)
    write_memory(folder, "edge_cache.md", MEMORY)
    status = okfgit("status", cwd=project, expect=2)  # what sync would do: a proposal, not a new concept
    assert "edge_cache.md: nearly duplicates project:decisions/edge-caching.md (Cache responses at the edge, " \
           "similarity 1.00); sync keeps the KB's and commits the agent's as " \
           "project:decisions/edge-caching.needs-merge.md" in status.out
    result = okfgit("sync", cwd=project)
    assert result.out.startswith("okfgit sync: captured 1, 1 need a merge")
    assert ("edge_cache.md: nearly duplicates project:decisions/edge-caching.md (Cache responses at the edge, "
            "similarity 1.00); not captured as a new concept (one fact in one place): the agent's words are committed "
            "as project:decisions/edge-caching.needs-merge.md, a proposal: `okfgit proposal drop "
            "project:decisions/edge-caching.needs-merge.md` when it adds nothing") in result.err
    tree = git("ls-tree", "-r", "--name-only", "HEAD", ".okf", cwd=project).out.split()
    assert ".okf/decisions/edge-caching.needs-merge.md" in tree and not any("/memory/" in p for p in tree)
    sibling = (project / ".okf" / "decisions" / "edge-caching.needs-merge.md").read_bytes()
    assert okf.split(sibling, "s").meta["okf_id"] == decision["okf_id"]  # it names the concept it repeats
    assert sibling.endswith(MEMORY.split(b"---\n", 2)[2])  # the agent's words, every one
    assert ("Okf-Near-Duplicate", "edge_cache.md project:decisions/edge-caching.md 1.00") in \
        trailers_by_git(git, project)
    # one fact in one place: the agent's file gives way to the concept it repeats
    assert not (folder / "edge_cache.md").exists() and (folder / "edge-caching.md").exists()
    assert "edge_cache" not in (folder / "MEMORY.md").read_text()
    # a person decides: status and doctor name it until then
    assert "agent proposals waiting for a person: 1" in okfgit("status", cwd=project, expect=2).out
    assert okfgit("sync", cwd=project).out == "okfgit sync: up to date\n"
    # it adds nothing: a person drops it, and the concept it repeats is the one fact
    okfgit("proposal", "drop", "project:decisions/edge-caching.needs-merge.md", cwd=project)
    assert not (project / ".okf" / "decisions" / "edge-caching.needs-merge.md").exists()
    okfgit("status", cwd=project)
    fsck(git, project)


def test_a_memory_repeating_a_global_decision_is_settled_by_name_of_its_tier(
        project: Path, okfgit: Runner, git: Runner, env: dict[str, str], home: Path) -> None:
    """A project fact that nearly repeats a global Decision stays in the project, as a sibling
    of a concept the project tier does not have: every remedy names the global tier and the
    one command that settles it there, and that command works."""
    okfgit("init", "--scope", "global", cwd=project)
    okfgit("new", "edge-caching", "--scope", "global", "--type", "Decision", "--title", "Cache responses at the edge",
           "--description", DECISION, "--dir", "decisions", "--no-edit", cwd=project)
    okfgit("sync", cwd=project)
    write_memory(memory(project, env, home), "edge_cache.md", MEMORY)
    sibling, concept = "project:decisions/edge-caching.needs-merge.md", "global:decisions/edge-caching.md"
    remedy = (f"merge what matters into {concept} (the global tier) yourself, then `okfgit proposal drop {sibling}`")

    assert f"when it adds nothing, or {remedy}" in okfgit("sync", cwd=project).err
    doctor = okfgit("doctor", "--scope", "project", cwd=project, expect=2).out
    assert f"needs-merge: unresolved needs-merge sibling of {concept}: {remedy}\n" in doctor
    status = okfgit("status", cwd=project, expect=2).out
    assert f"needs-merge variants waiting for a person: 1 concept\n  {concept}: 1 variant in {sibling}; {remedy}\n" \
        in status
    accept = okfgit("proposal", "accept", sibling, cwd=project, expect=2).err
    assert f"{sibling} proposes a version of {concept}, a concept of another tier: {remedy}" in accept
    dropped = okfgit("proposal", "drop", sibling, cwd=project).out
    assert dropped.startswith(f"dropped {sibling}; {concept} stays as it was (")
    okfgit("status", cwd=project)
    fsck(git, project)


def test_the_pair_is_a_warning_in_review_and_doctor_naming_both(project: Path, okfgit: Runner, git: Runner) -> None:
    _decision(project, okfgit)
    git("checkout", "-q", "-b", "feature", cwd=project)
    okfgit("new", "edge-ttl", "--type", "Note", "--title", "Edge cache TTL", "--description",
           "Edge responses are cached for 1 day.", "--dir", "memory", "--no-edit", cwd=project)
    data = json.loads(okfgit("review", "main...feature", "--format", "json", cwd=project).out)
    assert data["verdict"] == "merge"  # a warning: a person reads it, nothing is blocked
    assert [(f["code"], f["severity"], f["file"], f["message"]) for f in data["findings"]] == [
        ("near-duplicate", "warning", "memory/edge-ttl.md", "nearly duplicates decisions/edge-caching.md "
         "(similarity 1.00): one fact in one place: merge them, or supersede one by the other")]
    markdown = okfgit("review", "main...feature", "--format", "markdown", cwd=project).out
    assert "| warning | `near-duplicate` | `memory/edge-ttl.md` | nearly duplicates decisions/edge-caching.md" in markdown
    doctor = json.loads(okfgit("doctor", "--scope", "project", "--json", cwd=project).out)
    [found] = doctor["tiers"][0]["profile"]["findings"]
    assert (found["code"], found["severity"], found["file"]) == ("near-duplicate", "warning",
                                                                 "decisions/edge-caching.md")
    assert found["message"].startswith("nearly duplicates memory/edge-ttl.md (similarity 1.00)")
    # in the working tree too (pre-commit): a third wording, not committed yet
    third = project / ".okf" / "memory" / "cdn.md"
    third.write_text("---\ntype: Note\ntitle: CDN\ndescription: The edge caches responses for one day.\n"
                     "scope: project\nokf_id: 0a0a0a0a-0000-4000-8000-000000000001\nokf_source: authored\n---\n\nOne day.\n")
    worktree = okfgit("doctor", "--scope", "project", "--worktree", cwd=project, expect=2).out
    assert "memory/cdn.md: warning: near-duplicate: nearly duplicates" in worktree
    third.unlink()
    # superseding one by the other settles it: a deprecated concept is history, not a duplicate
    old = project / ".okf" / "decisions" / "edge-caching.md"
    old.write_bytes(okf.set_keys(old.read_bytes(), "d", {"status": "deprecated"}))
    git("commit", "-qam", "deprecate", cwd=project)
    assert json.loads(okfgit("doctor", "--scope", "project", "--json", cwd=project).out)["warnings"] == 0


def test_search_similar_lists_the_nearest_concepts(project: Path, okfgit: Runner, git: Runner) -> None:
    _decision(project, okfgit)
    okfgit("new", "edge-ttl", "--type", "Note", "--title", "Edge cache TTL", "--description",
           "Edge responses are cached for 1 day.", "--dir", "memory", "--no-edit", cwd=project)
    okfgit("new", "origin-cache", "--type", "Note", "--title", "Origin cache", "--description",
           "The origin caches rendered pages for an hour.", "--dir", "memory", "--no-edit", cwd=project)
    okfgit("new", "tabs", "--type", "Note", "--title", "Tabs", "--description", "Indent Python with four spaces.",
           "--dir", "memory", "--no-edit", cwd=project)
    out = okfgit("search", "--similar", "decisions/edge-caching.md", cwd=project).out.splitlines()
    assert out[0].startswith("1.00  project:memory/edge-ttl.md@") and out[0].endswith("(near-duplicate)")
    assert not any("tabs.md" in line for line in out)
    data = json.loads(okfgit("search", "--similar", "edge-caching", "--json", cwd=project).out)
    assert data["results"][0]["path"] == "memory/edge-ttl.md" and data["results"][0]["near_duplicate"] is True
    assert all(r["score"] < similar.THRESHOLD for r in data["results"][1:])
    assert "takes no WORDS" in okfgit("search", "cache", "--similar", "edge-caching", cwd=project, expect=2).err


def _bundle_signatures(root: Path) -> list[tuple[tuple[str, str], similar.Signature]]:
    out = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if okf.is_concept_path(rel) and path.name not in ("README.md", "LICENSE.md"):
            out.append(((root.name, rel), signature_of(root.name, rel, Entry("", FILE_MODE), path.read_bytes())))
    return out


def _bundles() -> list[Path]:
    return [p for p in sorted((FIXTURES / "okf-bundles").iterdir()) if p.is_dir()]


def test_unrelated_concepts_of_real_bundles_are_not_near_duplicates() -> None:
    signatures = [s for root in _bundles() for s in _bundle_signatures(root)]
    index = Index(signatures)
    assert index.pairs() == []  # no pair of the real bundles at or above the threshold
    # ten pairs of unrelated concepts, across and within bundles, score far below it
    keys = sorted(index.signatures)
    chosen = [(a, b) for a, b in itertools.combinations(keys, 2) if a[0] != b[0]][::97][:7]
    chosen += [(("ga4", "tables/events_.md"), ("ga4", "references/metrics/purchasers.md")),
               (("stackoverflow", "tables/users.md"), ("stackoverflow", "tables/badges.md")),
               (("okfgit_retail", "metrics/revenue.md"), ("okfgit_retail", "tables/customers.md"))]
    assert len(chosen) == 10
    for a, b in chosen:
        assert index.score(index.features(a), index.features(b)) < 0.6, (a, b)
