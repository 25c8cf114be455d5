"""Talking to a tier's git remote: the ``git`` command line, bounded in time, never prompting.

libgit2 would speak the protocols itself, but not with the user's credential helpers, ssh
configuration and agent: this is where okfgit's git layer uses git itself (the remotes'
configuration and the remote-tracking refs are read and written through ``Repo``).

okfgit builds no protocol of its own: fetch and push are ``git fetch`` and ``git push``,
so every transport git knows (a path, ssh, https) and every credential helper or SSH agent
works unchanged. Credentials are git's business: okfgit never stores or prints one, refuses
a URL that carries a password, and shows URLs without their user part.

Every call runs through ``git.command.run`` (its environment rule), no terminal
prompt (``GIT_TERMINAL_PROMPT=0``), HTTP's low-speed abort, an SSH connect timeout (unless
the person configured their own SSH command) and a hard deadline: on timeout the whole
process group (git and its ssh or https helper) is killed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from okfgit.errors import UsageError
from okfgit.git import command

DEFAULT_TIMEOUT_S = 10.0
_REJECTED = re.compile(r"\[rejected\]|\[remote rejected\]|non-fast-forward|fetch first|stale info", re.I)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one network call did: ``ok``; else ``rejected`` (a push the remote refused
    because it moved) or unreachable/failed with git's own words in ``message``."""

    ok: bool
    message: str = ""
    rejected: bool = False


def check_url(url: str) -> str:
    """``url`` when okfgit may store it; UsageError when it carries a password."""
    url = url.strip()
    if not url or "\n" in url or "\x00" in url:
        raise UsageError("a remote URL is one line and not empty")
    if url.startswith("-"):
        raise UsageError(f"{url!r} is not a remote URL")
    if _SCHEME.match(url):
        parts = urlsplit(url)
        if parts.password is not None:
            raise UsageError(
                "the remote URL carries a password; okfgit never stores credentials: give the URL "
                "without it and let git's credential helper or your SSH agent supply it"
            )
    return url


def public_url(url: str) -> str:
    """``url`` as okfgit shows it: an http(s) URL without its user part (a token is often
    written there); an ssh URL or a path as it is."""
    if _SCHEME.match(url):
        parts = urlsplit(url)
        if parts.scheme.lower() in ("http", "https", "ftp", "ftps") and "@" in parts.netloc:
            return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()
    return url


def environment(environ: Mapping[str, str], timeout_s: float, *, own_ssh_command: bool) -> dict[str, str]:
    """The environment for a network git command (see the module docstring)."""
    env = command.environment(environ)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["OKFGIT_IN_HOOK"] = "1"  # a hook git might run never starts okfgit again
    if not own_ssh_command and not env.get("GIT_SSH_COMMAND") and not env.get("GIT_SSH"):
        connect = max(1, int(timeout_s / 2))
        env["GIT_SSH_COMMAND"] = f"ssh -o ConnectTimeout={connect} -o BatchMode=yes"
    return env


def _network_args(timeout_s: float) -> list[str]:
    low = max(1, int(timeout_s / 2))
    return ["-c", f"http.lowSpeedTime={low}", "-c", "http.lowSpeedLimit=1000"]


def _run(args: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> tuple[int, str, str]:
    """Run git with a deadline (``command.run``); (exit code, stdout, stderr)."""
    done = command.run(["git", *args], env, cwd=cwd, timeout_s=timeout_s)
    return done.code, done.out, done.err


def fetch(path: Path, remote: str, env: Mapping[str, str], timeout_s: float) -> Outcome:
    """Fetch every branch of ``remote`` into ``refs/remotes/<remote>/`` (the remote-tracking
    refs; no working tree or local branch is touched)."""
    code, _, text = _run([*_network_args(timeout_s), "fetch", "--quiet", "--no-tags",
                         remote, f"+refs/heads/*:refs/remotes/{remote}/*"], path, env, timeout_s)
    return Outcome(code == 0, _last_line(text))


def push(path: Path, remote: str, local_branch: str, remote_branch: str, env: Mapping[str, str],
         timeout_s: float) -> Outcome:
    """Push ``local_branch`` to ``remote_branch``, never forced; ``rejected`` when the remote
    moved (fetch, integrate, push again)."""
    code, out, err = _run([*_network_args(timeout_s), "push", "--porcelain", remote,
                           f"{local_branch}:{remote_branch}"], path, env, timeout_s)
    if code == 0:
        return Outcome(True)
    text = err + "\n" + out
    return Outcome(False, _last_line(text), rejected=bool(_REJECTED.search(text)))


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    fatal = [line for line in lines if line.lower().startswith(("fatal:", "error:", "ssh:"))]
    return (fatal or lines or [""])[-1]
