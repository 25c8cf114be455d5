"""Who writes: OKF v0.2 §7 actors (``human:<id>``, ``agent:<name>``, ``process:<id>``).

``format.lifecycle.is_human`` is the one test of the ``human:`` prefix.

Consumers classify trust by the ``human:`` prefix, so okfgit writes it only for a command a
person ran: an agent's words are ``agent:<name>`` wherever they came from (a memory file,
an MCP call, a command an agent ran in its shell). The same actor goes into a concept's
``generated.by`` and into the commit's ``Okf-Actor`` trailer (spec/okf-format.md §7).

This module decides from the environment alone (no git, no disk); ``flows.concepts.actor``
adds the person's git identity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from okfgit.errors import UsageError
from okfgit.format.lifecycle import is_human

AGENT = "agent:"
PROCESS = "process:"
ENV = "OKF_ACTOR"  # the user's override: an actor in one of the three forms

CLAUDE_CODE = "agent:claude-code"  # capture of Claude Code's memory folder
GEMINI_CLI = "agent:gemini-cli"  # capture of Gemini CLI's private memory folder
MCP = "agent:mcp"  # an MCP client that did not say its name

# Variables an agent sets in the environment of every command it runs, so a command an
# agent typed is not taken for a person's. First match wins. Claude Code 2.1.332:
# ``CLAUDECODE=1`` (its Bash tool and hooks); Gemini CLI 0.61.0: ``GEMINI_CLI=1`` (its shell
# tool and MCP servers); opencode 1.18.33: ``OPENCODE=1`` (set in its own process, which its
# shell tool inherits); Codex 0.171.0: ``CODEX_THREAD_ID`` (the thread's id, added after its
# shell environment policy is applied, so in every mode). Codex's ``CODEX_SANDBOX``
# (``seatbelt``: macOS only) and ``CODEX_SANDBOX_NETWORK_DISABLED`` (only while the network
# is off) are set in fewer cases; they stay for older Codex releases. An agent okfgit does
# not know here is told apart only by the override (``OKF_ACTOR=agent:<name>``), which is
# also how a person inside an agent's terminal says it is them.
AGENT_SHELLS: tuple[tuple[str, str], ...] = (
    ("CLAUDECODE", "agent:claude-code"),
    ("GEMINI_CLI", "agent:gemini-cli"),
    ("OPENCODE", "agent:opencode"),
    ("CODEX_THREAD_ID", "agent:codex"),
    ("CODEX_SANDBOX", "agent:codex"),
    ("CODEX_SANDBOX_NETWORK_DISABLED", "agent:codex"),
)

_FORM = re.compile(r"^(human|agent|process):[^\s\x00-\x1f\x7f]+$")
_NAME = re.compile(r"[^a-z0-9._-]+")


def check(actor: str, where: str = ENV) -> str:
    """``actor`` when it is ``human:<id>``, ``agent:<name>`` or ``process:<id>`` (one token,
    usable in a trailer); else ``UsageError`` (exit 2)."""
    value = actor.strip()
    if not _FORM.match(value):
        raise UsageError(f"{where} must be an OKF actor, human:<id>, agent:<name> or process:<id> "
                         f"(no spaces), not {actor!r}")
    return value


def agent(name: str) -> str:
    """``agent:<name>`` for an agent that names itself (an MCP client's ``clientInfo.name``):
    lower-case, runs of other characters than letters, digits, ``.``, ``_``, ``-`` made ``-``."""
    slug = _NAME.sub("-", name.strip().lower()).strip("-")
    return f"{AGENT}{slug}" if slug else MCP


def person_only(actor: str, act: str) -> None:
    """UsageError (exit 2) unless ``actor`` is a person's (``lifecycle.is_human``): ``act``
    ("promoting to the global tier") is never an agent's."""
    if not is_human(actor):
        raise UsageError(f"{act} is a person's act, and this runs as {actor}; run it yourself in a terminal (or say "
                         "who you are with OKF_ACTOR=human:<you>)")


def from_environment(environ: Mapping[str, str]) -> str | None:
    """The actor the environment names: ``OKF_ACTOR`` (checked), else the agent whose shell
    this is; None when neither (then a person ran the command)."""
    override = environ.get(ENV)
    if override:
        return check(override)
    for variable, name in AGENT_SHELLS:
        if environ.get(variable):
            return name
    return None
