"""``doctor``: check each tier against OKF v0.2 conformance and against okfgit's profile.

The checks are ``knowledge.checks``; this verb picks the tiers, runs them at HEAD (or in the
working tree), adds whether git's index is behind HEAD, and renders the report.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from okfgit.context import Context
from okfgit.errors import EXIT_OK, EXIT_USAGE
from okfgit.format import lifecycle
from okfgit.format.findings import ERROR, WARNING, Finding
from okfgit.knowledge.checks import OKF, PROFILE, TierReport, check_tiers
from okfgit.knowledge.snapshot import Snapshot, snapshot, worktree_snapshot
from okfgit.knowledge.tiers import Tier, Workspace
from okfgit.plan import InProgress, in_progress, index_behind
from okfgit.targets import budget
from okfgit.format.words import plural


@dataclass(slots=True)
class Report:
    """Every checked tier, and the tiers skipped with the reason."""

    tiers: list[TierReport]
    skipped: list[str]

    @property
    def errors(self) -> int:
        return sum(t.count(ERROR) for t in self.tiers)

    @property
    def warnings(self) -> int:
        return sum(t.count(WARNING) for t in self.tiers)

    @property
    def exit_code(self) -> int:
        """2 when any error was found (warnings alone pass)."""
        return EXIT_USAGE if self.errors else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        return {"tiers": [t.to_json() for t in self.tiers], "skipped": self.skipped,
                "errors": self.errors, "warnings": self.warnings}


def run(ctx: Context, ws: Workspace, scope: str = "all", worktree: bool = False) -> Report:
    """Check the selected tiers (``all``: every one that exists) at HEAD or in the working tree."""
    tiers, skipped = ws.present(scope)
    read = worktree_snapshot if worktree else snapshot
    # Scanning allocates a few objects per file and frees none until the end: the cyclic
    # collector would only rescan them again and again. A caller that turned it off (capture)
    # finds it off again afterwards.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(ctx, ws, tiers, skipped, read, worktree)
    finally:
        if collecting:
            gc.enable()


def _run(ctx: Context, ws: Workspace, tiers: list[Tier], skipped: list[str], read: Callable[[Tier], Snapshot],
         worktree: bool) -> Report:
    reports, empty = check_tiers(ws, tiers, lifecycle.instant_of(ctx.now()), read=read, worktree=worktree,
                                 progress=ctx.progress)
    hidden = dict(budget.hidden(ws.project_repo, ctx.environ, ctx.home))
    for tier_report in reports:
        if tier_report.tier.name in hidden:  # an agent never reads okfgit's block for this tier
            tier_report.findings.append(Finding("block-hidden", WARNING, "AGENTS.md", hidden[tier_report.tier.name],
                                                group=PROFILE))
        busy = in_progress(tier_report.tier)
        if busy is not None:  # the index holds the operation's results: never advise resetting them
            tier_report.findings.extend(_in_progress_findings(busy))
            continue
        behind = index_behind(tier_report.tier)
        if behind is not None:
            first = behind.paths[0]
            kb_path = first[len(behind.tier.prefix) + 1:] if behind.tier.prefix else first
            tier_report.findings.append(Finding("index-behind", ERROR, kb_path, behind.message(), group=PROFILE))
    return Report(reports, skipped + empty)


def _in_progress_findings(busy: InProgress) -> list[Finding]:
    """A merge (rebase, cherry-pick...) under way: doctor read HEAD, which does not hold its
    result yet; each of the tier's files git left unmerged is an error saying how to resolve it."""
    prefix = busy.tier.prefix + "/" if busy.tier.prefix else ""
    out = [Finding("merge-in-progress", WARNING, "index.md", f"{busy.message()}; doctor checked HEAD, which does "
                   f"not hold the {busy.kind}'s result yet", group=PROFILE)]
    for path in busy.unmerged:
        out.append(Finding("merge-conflict", ERROR, path[len(prefix):] if path.startswith(prefix) else path,
                           f"not merged yet: {busy.remedy(path)}", group=PROFILE))
    return out


# -- text output -----------------------------------------------------------------------


def render_text(report: Report) -> str:
    """The human report: findings by tier, then by group, then a one-line summary."""
    out: list[str] = []
    for tier in report.tiers:
        where = "working tree" if tier.worktree else f"HEAD {tier.commit[:7] if tier.commit else '(none)'}"
        out.append(f"{tier.tier.label} tier: {tier.tier.root} ({where}, {plural(tier.concepts, 'concept')})")
        okf_findings = tier.group(OKF)
        verdict = "conformant" if tier.conformant else "NOT conformant"
        out.append(f"  OKF v0.2 conformance: {verdict}{_counts(okf_findings)}")
        out.extend(_finding_line(f) for f in okf_findings)
        profile = tier.group(PROFILE)
        out.append(f"  okfgit profile: {'ok' if not profile else _counts(profile).strip(' ()')}")
        out.extend(_finding_line(f) for f in profile)
    out.extend(f"note: {note}" for note in report.skipped)
    out.append(summary(report))
    return "\n".join(out)


def summary(report: Report) -> str:
    checked = len(report.tiers)
    conformant = sum(1 for t in report.tiers if t.conformant)
    return (f"{plural(report.errors, 'error')}, {plural(report.warnings, 'warning')} in {plural(checked, 'tier')}; "
            f"OKF v0.2 conformant: {conformant} of {checked}")


def _finding_line(f: Finding) -> str:
    return f"    {f.text()}"


def _counts(findings: list[Finding]) -> str:
    errors = sum(1 for f in findings if f.severity == ERROR)
    warnings = len(findings) - errors
    parts = [plural(n, w) for n, w in ((errors, "error"), (warnings, "warning")) if n]
    return f" ({', '.join(parts)})" if parts else ""

