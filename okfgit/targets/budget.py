"""What each agent actually sees of the projected knowledge, against its own budget.

Read from the files on disk after a projection, with each agent's own rule:

- Claude Code loads ``MEMORY.md`` within 200 lines and 25,000 bytes, and recalls only the
  200 newest ``*.md`` files of the memory folder (``recall.claude_candidates``), which holds
  only as many concept files as its budget (``State.held``: the last projection's);
- Codex (0.171.0) loads at most 32 KiB (``project_doc_max_bytes``) of the project's
  instruction files (per folder from the git root down, the first of ``AGENTS.override.md``,
  ``AGENTS.md``); ``$CODEX_HOME/AGENTS.md`` (or ``AGENTS.override.md``) is loaded besides,
  outside that budget. An ``AGENTS.override.md`` hides the ``AGENTS.md`` beside it, and with
  it okfgit's block (``hidden``).

``okfgit project --explain`` prints this, ``okfgit status`` warns from it. Reads only; no
file is written here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from okfgit.format import blocks
from okfgit.local.state import Held, MemoryFile, MemoryFiles, State
from okfgit.targets import claude_home, memory_index, recall
from okfgit.format.words import plural
from okfgit.git.objects import shown

CODEX_MAX_BYTES = 32 * 1024  # Codex's project_doc_max_bytes default


@dataclass(slots=True)
class FileBudget:
    """One instruction file an agent loads: its size and okfgit's block in it."""

    agent: str
    path: Path
    exists: bool
    size: int
    block: int  # bytes of okfgit's block (0 when none)
    scope: str = "project"  # global: a home-level file (outside Codex's budget for project files)

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "path": str(self.path), "exists": self.exists, "bytes": self.size,
                "block_bytes": self.block, "scope": self.scope}


@dataclass(slots=True)
class Explanation:
    """Per agent, what it sees, what was cut and why."""

    memory_dir: Path | None = None
    memory_md_lines: list[str] = field(default_factory=list)
    memory_md_bytes: int = 0
    memory_md_listed: int = 0  # lines that list a memory file
    memory_md_cut: bool = False  # pointer lines stand for concepts left out
    projected: int = 0  # memory files okfgit projected
    recall: list[tuple[str, str | None]] = field(default_factory=list)  # (file, citation or None: not okfgit's)
    neither: list[str] = field(default_factory=list)  # citations in neither MEMORY.md nor the recall 200
    neither_count: int = 0  # how many (``neither`` may be left empty: counted, not named)
    files: list[FileBudget] = field(default_factory=list)

    hidden: list[str] = field(default_factory=list)  # okfgit's blocks an agent does not read (``hidden``)
    held: Held | None = None  # the memory folder's budget, as the last projection that read every concept kept it

    @property
    def codex_bytes(self) -> int:
        """What counts against Codex's ``project_doc_max_bytes``: its project files only."""
        return sum(f.size for f in self.files if f.agent == "codex" and f.scope == "project")

    @property
    def over_budget(self) -> list[str]:
        """What an agent cannot see, one sentence each (empty when nothing is cut)."""
        out: list[str] = []
        if self.held is not None and self.held.sentence:
            out.append(self.held.sentence)
        if self.memory_md_cut:
            out.append(f"Claude Code: MEMORY.md lists {self.memory_md_listed} of {self.projected} projected "
                       f"concepts (it loads {memory_index.MAX_LINES} lines and {memory_index.MAX_BYTES:,} bytes); "
                       "the rest are reached through the tier indexes it points to")
        if self.neither_count:
            verb = "is" if self.neither_count == 1 else "are"
            out.append(f"Claude Code: {plural(self.neither_count, 'projected concept')} {verb} neither in MEMORY.md "
                       f"nor among the {recall.RECALL_LIMIT} files it can recall; agents reach them through the "
                       "indexes")
        if self.codex_bytes > CODEX_MAX_BYTES:
            out.append(f"Codex: the project's instruction files hold {self.codex_bytes:,} bytes, over the "
                       f"{CODEX_MAX_BYTES:,} it loads (project_doc_max_bytes); what comes last is cut")
        return out + self.hidden

    def to_json(self) -> dict[str, Any]:
        return {
            "claude": {
                "memory_dir": str(self.memory_dir) if self.memory_dir else None,
                "memory_md": {"lines": len(self.memory_md_lines), "bytes": self.memory_md_bytes,
                              "listed": self.memory_md_listed, "cut": self.memory_md_cut,
                              "max_lines": memory_index.MAX_LINES, "max_bytes": memory_index.MAX_BYTES,
                              "text": self.memory_md_lines},
                "projected": self.projected,
                "budget": ({"files": self.held.limit, "source": self.held.source, "holds": self.held.held,
                            "concepts": self.held.total} if self.held is not None else None),
                "recall": [{"rank": n, "file": name, "citation": cite}
                           for n, (name, cite) in enumerate(self.recall, start=1)],
                "recall_limit": recall.RECALL_LIMIT,
                "neither": self.neither,
            },
            "codex": {"bytes": self.codex_bytes, "max_bytes": CODEX_MAX_BYTES,
                      "files": [f.to_json() for f in self.files if f.agent == "codex"], "hidden": self.hidden},
            "claude_md": [f.to_json() for f in self.files if f.agent == "claude"],
            "over_budget": self.over_budget,
        }


def explain(owned: State, memory_dir: Path | None, worktree: Path | None, environ: dict[str, str] | Any,
            home: Path, *, seen: Mapping[str, tuple[int, int, int, bool, bool]] | None = None,
            detail: bool = True) -> Explanation:
    """What Claude Code and Codex see now, read from the disk with their own rules.

    ``seen``: the memory folder's entries as a scan just found them (so it is not walked
    again); without ``detail`` the concepts in neither list are counted, not named (what
    ``status`` says), so no record but those of the recall candidates is read."""
    out = Explanation(memory_dir=memory_dir)
    records: MemoryFiles | dict[str, MemoryFile] = (
        owned.memory_files if memory_dir is not None and owned.memory_dir == memory_dir else {})
    out.projected = len(records)
    out.held = owned.held if records else None
    listed: set[str] = set()
    if memory_dir is not None:
        try:
            text = (memory_dir / "MEMORY.md").read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        out.memory_md_lines = text.splitlines()
        out.memory_md_bytes = len(text.encode("utf-8"))
        for line in out.memory_md_lines:
            name = memory_index.linked_name(line)
            if name is not None:
                listed.add(name)

        def recorded(names: Iterable[str]) -> set[str]:  # which of ``names`` are records, without listing them all
            if isinstance(records, MemoryFiles):
                return set(records.get_many(names))
            return {n for n in names if n in records}

        out.memory_md_listed = len(recorded(listed))
        out.memory_md_cut = any(line.endswith("not listed here") for line in out.memory_md_lines)
        if seen is not None:
            names = recall.candidate_names(memory_dir, seen)
        else:
            top = recall.claude_candidates(memory_dir) if memory_dir.is_dir() else []
            names = [path.relative_to(memory_dir).as_posix() for path in top]
        names = [shown(n) for n in names]  # a name that is not UTF-8 is none of okfgit's records
        found = records.get_many(names) if isinstance(records, MemoryFiles) else records
        for name in names:
            rec = found.get(name)
            out.recall.append((name, rec.citation if rec is not None else None))
        recalled = set(names)
        if detail:
            out.neither = [rec.citation for name, rec in sorted(records.items())
                           if name not in recalled and name not in listed]
            out.neither_count = len(out.neither)
        else:
            out.neither_count = len(records) - len(recorded(recalled | listed))
    codex = claude_home.codex_home(environ, home)
    out.files.append(_file("codex", _codex_doc(codex), "global"))
    if worktree is not None:
        out.files.append(_file("codex", _codex_doc(worktree), "project"))
    out.files.append(_file("claude", claude_home.claude_home(environ, home) / "CLAUDE.md", "global"))
    out.hidden = [sentence for _, sentence in hidden(worktree, environ, home)]
    return out


OVERRIDE = "AGENTS.override.md"


def _codex_doc(folder: Path) -> Path:
    """The file Codex reads in ``folder``: ``AGENTS.override.md`` when it is there, else ``AGENTS.md``."""
    override = folder / OVERRIDE
    return override if override.is_file() else folder / "AGENTS.md"


def hidden(worktree: Path | None, environ: Mapping[str, str] | Any, home: Path) -> list[tuple[str, str]]:
    """okfgit's blocks Codex never reads, as (scope, one sentence): an ``AGENTS.override.md``
    beside the ``AGENTS.md`` that holds one (the repository's root, ``$CODEX_HOME``) is read
    instead."""
    out: list[tuple[str, str]] = []
    places = [("project", worktree)] if worktree is not None else []
    places.append(("global", claude_home.codex_home(environ, home)))
    for scope, folder in places:
        assert folder is not None
        override = folder / OVERRIDE
        if not override.is_file():
            continue
        try:
            text = (folder / "AGENTS.md").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if blocks.read_block(text, scope) is None:
            continue
        out.append((scope, f"Codex: {override} hides {folder / 'AGENTS.md'} and okfgit's {scope} block in it (Codex "
                           "reads the override instead); copy the block into the override, or remove the override"))
    return out


def _file(agent: str, path: Path, scope: str) -> FileBudget:
    try:
        data = path.read_bytes()
    except OSError:
        return FileBudget(agent, path, os.path.lexists(path), 0, 0, scope)
    content = blocks.read_block(data.decode("utf-8", errors="replace"), scope)
    block = len(blocks.render_block(scope, content).encode("utf-8")) if content is not None else 0
    return FileBudget(agent, path, True, len(data), block, scope)
