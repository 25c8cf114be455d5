"""A recording ``gh`` for tests: a real executable on PATH that logs each call and answers from a script.

Each call is appended to ``<folder>/gh-calls.jsonl`` as ``{"args": [...], "body": <text of any
--body-file or --input file>, "env": {GH_REPO, GITHUB_REPOSITORY}}``. Answers come from ``<folder>/gh-answers.json``:
a list of ``{"prefix": [args...], "stdout": "...", "code": 0}``, the first whose prefix matches
the call's first arguments wins (one with ``"once": true`` answers one call and is gone, so the
next call finds the answer after it); no match prints nothing and exits 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCRIPT = '''#!{python} -S
import json, os, sys
folder = {folder!r}
args = sys.argv[1:]
body = None
for flag in ("--body-file", "--input"):
    if flag in args and args.index(flag) + 1 < len(args):
        name = args[args.index(flag) + 1]
        body = sys.stdin.read() if name == "-" else open(name, encoding="utf-8").read()
with open(os.path.join(folder, "gh-calls.jsonl"), "a", encoding="utf-8") as fh:
    fh.write(json.dumps({{"args": args, "body": body}}) + "\\n")
answers = os.path.join(folder, "gh-answers.json")
listed = json.load(open(answers)) if os.path.exists(answers) else []
for n, answer in enumerate(listed):
    if args[: len(answer["prefix"])] == answer["prefix"]:
        if answer.get("once"):
            with open(answers, "w") as fh:
                json.dump(listed[:n] + listed[n + 1:], fh)
        sys.stdout.write(answer.get("stdout", ""))
        sys.stderr.write(answer.get("stderr", ""))
        sys.exit(answer.get("code", 0))
'''


def install(folder: Path, answers: list[dict] | None = None) -> Path:
    """Write ``gh`` into ``folder`` (which goes first on PATH); return ``folder``. It needs only
    the standard library, so it starts without ``site`` (``-S``): a third of the start-up."""
    folder.mkdir(parents=True, exist_ok=True)
    gh = folder / "gh"
    gh.write_text(SCRIPT.format(python=sys.executable, folder=str(folder)))
    gh.chmod(0o755)
    answer(folder, answers or [])
    return folder


def answer(folder: Path, answers: list[dict]) -> None:
    (folder / "gh-answers.json").write_text(json.dumps(answers))


def calls(folder: Path) -> list[dict]:
    log = folder / "gh-calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
