"""Gemini CLI's context file in the repository: ``GEMINI.md``, the project tier's block.

Gemini CLI 0.61.0 loads ``<gemini folder>/<name>`` in every session (the global block there
is ``home_agents``' ``gemini-md``) and, in a trusted folder, each ``<name>`` from the folder
it runs in up to the git root, ``<name>`` being ``context.fileName`` from its settings (first
name; default ``GEMINI.md``; see ``gemini_home``). So ``gemini-project`` writes the project
tier's block, the same bytes as in ``AGENTS.md`` (a relative pointer, identical in every
clone), in ``<worktree>/<name>``, only when the project uses Gemini CLI: that file exists,
or the repository has a ``.gemini/`` folder (its Gemini settings). A project opts in by
creating either. When ``<name>`` is ``AGENTS.md`` the ``agents-md`` target already writes
that block there.
"""

from __future__ import annotations

from okfgit.targets import gemini_home
from okfgit.targets.agents_md import SCOPE as PROJECT, project_block
from okfgit.targets.base import TargetPlan, View, plan_block


class GeminiProject:
    name = "gemini-project"
    group = "gemini"

    def plan(self, view: View) -> TargetPlan:
        if view.tier(PROJECT) is None or view.worktree is None:
            return TargetPlan()
        name = gemini_home.context_file_names(view.worktree, view.ctx.environ, view.ctx.home)[0]
        out = TargetPlan(watched=[str(view.worktree / ".gemini" / "settings.json"), str(view.worktree / ".gemini")])
        path = view.worktree / name
        if name == "AGENTS.md" or not (path.exists() or path.is_symlink() or (view.worktree / ".gemini").is_dir()):
            out.watched.append(str(path))
            return out
        block = plan_block(path, PROJECT, project_block(view.nav_protocol),
                           "project knowledge protocol for Gemini CLI", owned=view.state, wrote=view.wrote)
        block.watched.extend(out.watched)
        return block
