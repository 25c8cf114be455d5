#!/usr/bin/env python3
"""Generate a synthetic, valid OKF v0.2 knowledge base for benchmarks.

Standalone script and importable module; stdlib only.

Layout (two folder levels, about 35 concepts per leaf folder)::

    index.md                          (okf_version: "0.2" frontmatter, lists areas)
    area-00/index.md                  (lists topics)
    area-00/topic-00/index.md         (lists concepts, sorted by filename)
    area-00/topic-00/concept-00000.md

Every concept carries okfgit's profile keys in a fixed order (type, title,
description, tags, scope, okf_id, okf_source) and a short prose body with 1-3
relative links to other concepts and, now and then, a bundle-absolute link
(``/area-01/topic-02/concept-00045.md``, resolved against the KB root).  Output
is a pure function of ``(n, scope, seed)``: the same arguments always produce
byte-identical files, and ``make_repo`` produces the same commit OID.

CLI::

    python bench/genkb.py DEST --n 1000 [--layout project|global] [--seed 0] [--plain]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import random
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "TYPES",
    "Concept",
    "plan",
    "render_concept",
    "generate",
    "make_repo",
    "git_env",
    "main",
]

TYPES: Final = ("Decision", "Discovery", "Lesson", "Reference", "Playbook")

#: Target concepts per leaf folder; actual sizes stay within about 20-50.
LEAF_TARGET: Final = 35
#: Target topic folders per area folder.
TOPICS_PER_AREA: Final = 10

ROOT_HEADING: Final = "Knowledge base"
COMMIT_MESSAGE: Final = "Seed synthetic OKF knowledge base for benchmarks\n"

#: Fixed identity and clock for reproducible commits.
GIT_IDENTITY: Final = {
    "GIT_AUTHOR_NAME": "okfgit bench",
    "GIT_AUTHOR_EMAIL": "bench@okfgit.invalid",
    "GIT_AUTHOR_DATE": "2025-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "okfgit bench",
    "GIT_COMMITTER_EMAIL": "bench@okfgit.invalid",
    "GIT_COMMITTER_DATE": "2025-01-01T00:00:00+0000",
}

# --- vocabularies -----------------------------------------------------------
# Plain words only: every title/description is a safe plain YAML scalar (no
# ': ', no '#', no leading indicator, never a bool/null/number).

_ADJECTIVES: Final = (
    "Atomic", "Batched", "Bounded", "Cached", "Canonical", "Cold", "Concurrent",
    "Deferred", "Detached", "Deterministic", "Durable", "Eager", "Ephemeral",
    "Incremental", "Idempotent", "Lazy", "Layered", "Local", "Nested", "Optimistic",
    "Orphaned", "Parallel", "Partial", "Pinned", "Portable", "Quiet", "Remote",
    "Retried", "Scoped", "Sharded", "Shallow", "Signed", "Sparse", "Stale",
    "Streaming", "Strict", "Tiered", "Verbose", "Versioned", "Warm",
)
_NOUNS: Final = (
    "blob lookups", "branch refs", "cache keys", "checkout hooks", "commit trailers",
    "config reads", "dependency pins", "diff hunks", "error codes", "exit paths",
    "fixture data", "folder indexes", "frontmatter keys", "hash checks", "index entries",
    "lock files", "log entries", "merge bases", "migration steps", "object reads",
    "packfiles", "path filters", "prompt files", "rebase steps", "release notes",
    "retry budgets", "review queues", "schema fields", "search queries", "session state",
    "shell wrappers", "snapshot trees", "staging areas", "submodule paths", "tag lists",
    "test doubles", "tier roots", "tree walks", "upgrade checks", "worktree paths",
    "agent memories", "alias tables", "build caches", "capture runs", "clock skew",
    "content hashes", "doctor reports", "editor buffers", "encoding rules", "file modes",
)
_CONTEXTS: Final = (
    "the sync loop", "project tiers", "global tiers", "job runs", "code review",
    "pre-commit hooks", "post-checkout hooks", "CI pipelines", "large monorepos",
    "fresh clones", "shallow clones", "detached worktrees", "release branches",
    "hotfix branches", "nightly builds", "local development", "remote agents",
    "offline laptops", "shared runners", "container images", "the projection step",
    "the capture step", "the doctor pass", "the promote flow", "the index rebuild",
    "legacy bundles", "imported bundles", "cross-tier lookups", "rename detection",
    "conflict resolution", "onboarding docs", "incident reviews", "API clients",
    "the plugin host", "the test suite", "benchmark runs", "Windows checkouts",
    "macOS laptops", "Linux servers", "cold caches", "warm caches", "slow disks",
    "network mounts", "read-only mounts", "symlinked folders", "case-folding filesystems",
    "long paths", "unicode paths", "empty repositories", "huge histories",
)
_TAGS: Final = (
    "caching", "git-internals", "performance", "testing", "tooling", "ci",
    "hooks", "indexing", "storage", "security", "migration", "naming",
    "review", "observability", "packaging", "concurrency", "config", "docs",
)
_SUBJECTS: Final = (
    "The team", "Our tooling", "The reviewer", "The first prototype", "A later run",
    "The benchmark", "The maintainer", "Each agent", "The nightly job", "The doctor pass",
)
_VERBS: Final = (
    "noticed that", "decided that", "confirmed that", "measured that", "learned that",
    "documented that", "agreed that", "found that", "verified that", "recorded that",
)
_CLAIMS: Final = (
    "reads from HEAD stay fast when the tree is unchanged",
    "writing blobs verbatim keeps the hashes stable",
    "a second pass over the index is rarely needed",
    "small folders keep review diffs readable",
    "renames are cheaper than copies in this layout",
    "the slow path only triggers after a merge",
    "retrying once hides most transient failures",
    "sorting entries by filename avoids noisy diffs",
    "one commit per write keeps history easy to bisect",
    "cold starts dominate the cost of tiny operations",
    "the cache must be keyed by tree OID and not by mtime",
    "users rarely edit generated index files by hand",
    "stale entries are easier to spot with a scope key",
    "the fallback path must never drop unsaved edits",
    "short descriptions make the index easier to scan",
    "links across areas are less common than local ones",
)
_LINK_LEADS: Final = (
    "See also", "This builds on", "Compare with", "It contrasts with",
    "Background is in", "A related note is", "The follow-up lives in",
)
_DESC_LEADS: Final = {
    "Decision": "Records the decision on",
    "Discovery": "Describes what we found about",
    "Lesson": "Captures the lesson learned from",
    "Reference": "Summarises reference facts on",
    "Playbook": "Lists the steps for handling",
}

_TITLE_SPACE: Final = len(_ADJECTIVES) * len(_NOUNS) * len(_CONTEXTS)
_TITLE_STRIDE: Final = 7_919  # prime, coprime to _TITLE_SPACE -> bijection


@dataclass(frozen=True, slots=True)
class Concept:
    """One planned concept; ``path`` is POSIX, relative to the KB root."""

    index: int
    path: str
    type: str
    title: str
    description: str
    tags: tuple[str, ...]
    okf_id: str

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0]

    @property
    def filename(self) -> str:
        return self.path.rsplit("/", 1)[1]


# --- planning ----------------------------------------------------------------


def _split_even(total: int, parts: int) -> list[int]:
    """Split ``total`` into ``parts`` sizes that differ by at most one."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _width(count: int, minimum: int) -> int:
    return max(minimum, len(str(max(count - 1, 0))))


def _title(i: int, seed: int) -> str:
    k = (i * _TITLE_STRIDE + seed * 104_729) % _TITLE_SPACE
    k, c = divmod(k, len(_CONTEXTS))
    a, b = divmod(k, len(_NOUNS))
    title = f"{_ADJECTIVES[a]} {_NOUNS[b]} in {_CONTEXTS[c]}"
    if i >= _TITLE_SPACE:  # keep titles unique past the combinatorial space
        title += f" {i // _TITLE_SPACE + 1}"
    return title


def _okf_id(seed: int, i: int) -> str:
    digest = hashlib.sha256(f"okfgit-bench:{seed}:{i}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def plan(n: int, *, scope: str = "project", seed: int = 0) -> list[Concept]:
    """Decide every concept's path and metadata, without touching the disk."""
    if n < 0:
        raise ValueError("n must be >= 0")
    if not scope or any(ch in scope for ch in ":#\n'\"[]{},"):
        raise ValueError(f"scope must be a plain word: {scope!r}")
    if n == 0:
        return []
    leaves = max(1, round(n / LEAF_TARGET))
    areas = math.ceil(leaves / TOPICS_PER_AREA)
    topics_per_area = _split_even(leaves, areas)
    leaf_sizes = _split_even(n, leaves)
    aw, cw = _width(areas, 2), _width(n, 5)
    tw = _width(max(topics_per_area), 2)
    rng = random.Random(f"okfgit-bench-meta:{seed}")
    concepts: list[Concept] = []
    i = 0
    leaf = 0
    for a, n_topics in enumerate(topics_per_area):
        for t in range(n_topics):
            folder = f"area-{a:0{aw}d}/topic-{t:0{tw}d}"
            for _ in range(leaf_sizes[leaf]):
                ctype = TYPES[i % len(TYPES)]
                title = _title(i, seed)
                desc = f"{_DESC_LEADS[ctype]} {title[0].lower()}{title[1:]}."
                tags = tuple(rng.sample(_TAGS, rng.randint(1, 3)))
                concepts.append(
                    Concept(
                        index=i,
                        path=f"{folder}/concept-{i:0{cw}d}.md",
                        type=ctype,
                        title=title,
                        description=desc,
                        tags=tags,
                        okf_id=_okf_id(seed, i),
                    )
                )
                i += 1
            leaf += 1
    return concepts


# --- rendering ---------------------------------------------------------------


def _relpath(target: str, from_folder: str) -> str:
    """Relative POSIX path from ``from_folder`` to ``target`` (both KB-relative)."""
    src = from_folder.split("/")
    dst = target.split("/")
    common = 0
    while common < min(len(src), len(dst) - 1) and src[common] == dst[common]:
        common += 1
    return "/".join([".."] * (len(src) - common) + dst[common:])


def _pick_targets(c: Concept, concepts: list[Concept], rng: random.Random) -> list[Concept]:
    n = len(concepts)
    if n < 2:
        return []
    want = min(rng.randint(1, 3), n - 1)
    picked: dict[int, Concept] = {}
    while len(picked) < want:
        if rng.random() < 0.6:  # mostly local links: within +-40 positions
            j = c.index + rng.choice((-1, 1)) * rng.randint(1, 40)
            j = min(max(j, 0), n - 1)
        else:
            j = rng.randrange(n)
        if j != c.index:
            picked.setdefault(j, concepts[j])
    return list(picked.values())


def render_concept(c: Concept, concepts: list[Concept], *, scope: str, seed: int) -> str:
    """Render one concept file (frontmatter + body), LF line endings."""
    rng = random.Random(f"okfgit-bench-body:{seed}:{c.index}")
    targets = _pick_targets(c, concepts, rng)
    n_lines = rng.randint(max(3, len(targets)), 15)
    lines = [
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_CLAIMS)}."
        for _ in range(n_lines)
    ]
    slots = rng.sample(range(n_lines), len(targets))
    for slot, t in zip(slots, targets):
        href = "/" + t.path if rng.random() < 0.15 else _relpath(t.path, c.folder)
        lines[slot] += f" {rng.choice(_LINK_LEADS)} [{t.title}]({href})."
    tags = ", ".join(c.tags)
    head = (
        "---\n"
        f"type: {c.type}\n"
        f"title: {c.title}\n"
        f"description: {c.description}\n"
        f"tags: [{tags}]\n"
        f"scope: {scope}\n"
        f"okf_id: {c.okf_id}\n"
        "okf_source: authored\n"
        "---\n\n"
    )
    return head + "\n".join(lines) + "\n"


def _index_text(heading: str, entries: list[str], *, root: bool) -> str:
    front = '---\nokf_version: "0.2"\n---\n\n' if root else ""
    return f"{front}# {heading}\n\n" + "".join(e + "\n" for e in entries)


def _folder_sentence(name: str) -> str:
    # okfgit's index regeneration describes a subfolder by the first sentence of
    # its index intro, else "Concepts under <name>/."; our sub-indexes have no
    # intro, so using the same sentence makes a generated KB a fixed point of
    # `okfgit index` (no rewrite on a no-op run).
    return f"Concepts under {name}/."


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def generate(root: Path, n: int, *, scope: str = "project", seed: int = 0) -> list[str]:
    """Write an OKF v0.2 KB of ``n`` concepts under ``root``.

    ``root`` is created if needed and must be empty (or absent; a ``.git``
    entry is allowed, so a fresh repository's top level works).  Returns the
    concept paths, POSIX and relative to ``root``, in generation order (which
    is also sorted order).  Index files are written too but not returned.
    """
    root = Path(root)
    if root.exists() and any(p.name != ".git" for p in root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    concepts = plan(n, scope=scope, seed=seed)
    root.mkdir(parents=True, exist_ok=True)

    by_folder: dict[str, list[Concept]] = {}
    for c in concepts:
        by_folder.setdefault(c.folder, []).append(c)

    areas: dict[str, list[str]] = {}
    for folder, members in by_folder.items():
        d = root / folder
        d.mkdir(parents=True, exist_ok=True)
        for c in members:
            _write(d / c.filename, render_concept(c, concepts, scope=scope, seed=seed))
        entries = [
            f"- [{c.title}]({c.filename}) — {c.description}"
            for c in sorted(members, key=lambda c: c.filename)
        ]
        _write(d / "index.md", _index_text(folder.rsplit("/", 1)[1], entries, root=False))
        area, topic = folder.split("/")
        areas.setdefault(area, []).append(topic)

    root_entries: list[str] = []
    for area, topics in sorted(areas.items()):
        topic_entries = []
        for topic in sorted(topics):
            topic_entries.append(f"- [{topic}]({topic}/index.md) — {_folder_sentence(topic)}")
        _write(root / area / "index.md", _index_text(area, topic_entries, root=False))
        root_entries.append(f"- [{area}]({area}/index.md) — {_folder_sentence(area)}")
    _write(root / "index.md", _index_text(ROOT_HEADING, root_entries, root=True))
    return [c.path for c in concepts]


# --- git -----------------------------------------------------------------------


def git_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for reproducible git commands: fixed identity and dates,
    no system/global config (so autocrlf, signing, hooks paths... never apply)."""
    env = dict(os.environ if base is None else base)
    env.update(GIT_IDENTITY)
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    env.pop("GIT_INDEX_FILE", None)
    return env


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), *args],
        env=git_env(),
        check=True,
        stdout=subprocess.DEVNULL,
    )


_README = """\
# Synthetic benchmark project

This repository was generated by `bench/genkb.py` for okfgit benchmarks.
Its knowledge base lives in `.okf/` ({n} concepts, seed {seed}).
"""


def make_repo(dest: Path, n: int, *, layout: str = "project", seed: int = 0) -> Path:
    """Create a git repository at ``dest`` holding a generated KB, in one commit.

    ``layout="project"``: KB under ``dest/.okf/`` (scope ``project``) plus a
    top-level ``README.md``.  ``layout="global"``: KB at the repo root (scope
    ``global``).  Branch ``main``; fixed author/committer/date, so the commit
    OID depends only on ``(n, layout, seed)``.  The repo's local config gets the
    bench identity so later commits in it work without a global identity.
    Returns ``dest``.
    """
    if layout not in ("project", "global"):
        raise ValueError(f"layout must be 'project' or 'global', not {layout!r}")
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "init", "-q", str(dest)],
        env=git_env(),
        check=True,
    )
    _git(dest, "config", "user.name", GIT_IDENTITY["GIT_AUTHOR_NAME"])
    _git(dest, "config", "user.email", GIT_IDENTITY["GIT_AUTHOR_EMAIL"])
    _git(dest, "config", "core.autocrlf", "false")
    _git(dest, "config", "commit.gpgsign", "false")
    if layout == "project":
        generate(dest / ".okf", n, scope="project", seed=seed)
        _write(dest / "README.md", _README.format(n=n, seed=seed))
    else:
        generate(dest, n, scope="global", seed=seed)
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--no-verify", "-m", COMMIT_MESSAGE)
    return dest


# --- CLI -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="genkb.py", description="Generate a synthetic OKF v0.2 knowledge base."
    )
    p.add_argument("dest", type=Path, help="destination directory (absent or empty)")
    p.add_argument("--n", type=int, default=1000, help="number of concepts (default 1000)")
    p.add_argument("--layout", choices=("project", "global"), default="project")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--plain",
        action="store_true",
        help="only write the KB files at DEST (scope from --layout), no git repo",
    )
    args = p.parse_args(argv)
    start = time.perf_counter()
    try:
        if args.plain:
            generate(args.dest, args.n, scope=args.layout, seed=args.seed)
            where = args.dest
        else:
            repo = make_repo(args.dest, args.n, layout=args.layout, seed=args.seed)
            where = repo / ".okf" if args.layout == "project" else repo
    except (FileExistsError, ValueError) as exc:
        print(f"genkb: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - start
    print(f"{args.n} concepts at {where} in {elapsed:.2f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
