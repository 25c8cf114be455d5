"""What each agent actually sees of the projected knowledge, against its own budget.

Read from the files on disk after a projection, with each agent's own rule:

- Claude Code loads ``MEMORY.md`` within 200 lines and 25,000 bytes, and recalls only the
  200 newest ``*.md`` files of the memory folder (``recall.claude_candidates``);
- Codex loads at most 32 KiB (``project_doc_max_bytes``) of AGENTS.md files in total:
  ``$CODEX_HOME/AGENTS.md`` and the project's.

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
from okfgit.local.state import MemoryFile, MemoryFiles, State
from okfgit.targets import claude_home, memory_index, recall

CODEX_MAX_BYTES = 32 * 1024  # Codex's project_doc_max_bytes default


@dataclass(slots=True)
class FileBudget:
    """One instruction file an agent loads: its size and okfgit's block in it."""

    agent: str
    path: Path
    exists: bool
    size: int
    block: int  # bytes of okfgit's block (0 when none)

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "path": str(self.path), "exists": self.exists, "bytes": self.size,
                "block_bytes": self.block}


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

    @property
    def codex_bytes(self) -> int:
        return sum(f.size for f in self.files if f.agent == "codex")

    @property
    def over_budget(self) -> list[str]:
        """What an agent cannot see, one sentence each (empty when nothing is cut)."""
        out: list[str] = []
        if self.memory_md_cut:
            out.append(f"Claude Code: MEMORY.md lists {self.memory_md_listed} of {self.projected} projected "
                       f"concepts (it loads {memory_index.MAX_LINES} lines and {memory_index.MAX_BYTES:,} bytes); "
                       "the rest are reached through the tier indexes it points to")
        if self.neither_count:
            out.append(f"Claude Code: {self.neither_count} projected concept(s) are neither in MEMORY.md nor among "
                       f"the {recall.RECALL_LIMIT} files it can recall; agents reach them through the indexes")
        if self.codex_bytes > CODEX_MAX_BYTES:
            out.append(f"Codex: its AGENTS.md files hold {self.codex_bytes:,} bytes, over the {CODEX_MAX_BYTES:,} "
                       "it loads (project_doc_max_bytes); what comes last is cut")
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "claude": {
                "memory_dir": str(self.memory_dir) if self.memory_dir else None,
                "memory_md": {"lines": len(self.memory_md_lines), "bytes": self.memory_md_bytes,
                              "listed": self.memory_md_listed, "cut": self.memory_md_cut,
                              "max_lines": memory_index.MAX_LINES, "max_bytes": memory_index.MAX_BYTES,
                              "text": self.memory_md_lines},
                "projected": self.projected,
                "recall": [{"rank": n, "file": name, "citation": cite}
                           for n, (name, cite) in enumerate(self.recall, start=1)],
                "recall_limit": recall.RECALL_LIMIT,
                "neither": self.neither,
            },
            "codex": {"bytes": self.codex_bytes, "max_bytes": CODEX_MAX_BYTES,
                      "files": [f.to_json() for f in self.files if f.agent == "codex"]},
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
    codex = claude_home.codex_home(environ, home) / "AGENTS.md"
    out.files.append(_file("codex", codex, "global"))
    if worktree is not None:
        out.files.append(_file("codex", worktree / "AGENTS.md", "project"))
    out.files.append(_file("claude", claude_home.claude_home(environ, home) / "CLAUDE.md", "global"))
    return out


def _file(agent: str, path: Path, scope: str) -> FileBudget:
    try:
        data = path.read_bytes()
    except OSError:
        return FileBudget(agent, path, os.path.lexists(path), 0, 0)
    content = blocks.read_block(data.decode("utf-8", errors="replace"), scope)
    block = len(blocks.render_block(scope, content).encode("utf-8")) if content is not None else 0
    return FileBudget(agent, path, True, len(data), block)
