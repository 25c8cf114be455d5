"""``merge-driver``: git's merge driver for the files okfgit keeps in the project tier.

git runs it (gitattributes(5), "Defining a custom merge driver") as

    okfgit merge-driver %O %A %B %L %P

for every ``.okf/**/*.md`` that both sides changed, whether git is merging, rebasing,
cherry-picking or pulling: ``%O``, ``%A`` and ``%B`` are files holding the merge base's, our
and their version, ``%L`` the conflict marker size and ``%P`` the path. The result goes into
``%A``; the exit code is 0 for a clean merge and 1 when conflict markers were left.

It reads no repository and needs no network: the three files in, one file out. Any failure
of okfgit's merge (input it cannot read as its kind, a bug) falls back to git's own text
merge of the whole file (``git merge-file``), so git never sees a crash and never a half
written file: the worst case is the conflict git would have shown without the driver.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from okfgit.context import Context
from okfgit.errors import IntegrityError
from okfgit.format import merge as merging
from okfgit.knowledge.tiers import PROJECT_PREFIX
from okfgit.plan import FileWrite, Plan, apply

CONFLICTED = 1  # git's protocol: any non-zero exit is "conflicts left in %A"
LABELS = ("ours", "base", "theirs")  # git merge-file -L, in its order: current, base, other


@dataclass(frozen=True, slots=True)
class DriverResult:
    """What the driver did with one file."""

    path: str
    conflicts: list[str]  # the parts both sides changed two ways
    fallback: str | None = None  # why git's text merge of the whole file was used instead
    conflicted: bool = False

    @property
    def exit_code(self) -> int:
        return CONFLICTED if self.conflicted else 0


def merge(ctx: Context, base: Path, ours: Path, theirs: Path, marker_size: int, path: str) -> DriverResult:
    """Merge ``theirs`` into ``ours`` (written in place) from ``base``, as git asks of a driver."""
    odd = [str(file) for file in (base, ours, theirs) if file.is_symlink() or not file.is_file()]
    if odd:  # git hands the driver its own scratch files: anything else is not ours to write through
        return DriverResult(path, [], f"not git's scratch files, left as they are: {', '.join(odd)}", True)
    try:
        data = [file.read_bytes() for file in (base, ours, theirs)]
        markers = merging.Markers(marker_size, LABELS[0], LABELS[2])
        merged = merging.merge_file(data[0] or None, data[1], data[2], kb_path(path), markers,
                                    text=_text_merge(ctx.environ, marker_size))
        # git's scratch copy of ours: git reads the result back from it (no fsync: git stages it)
        write = FileWrite(ours, merged.data, f"the merge of {path}", fsync=False, old=data[1])
        apply(ctx, Plan(writes=[write])).raise_failed()
        return DriverResult(path, merged.conflicts, None, bool(merged.conflicts))
    except Exception as exc:  # noqa: BLE001 - git must never see the driver fail: it gets git's own merge
        why = f"{type(exc).__name__}: {exc}"
    return DriverResult(path, [], why, _git_merge_file(ctx.environ, base, ours, theirs, marker_size))


def kb_path(path: str) -> str:
    """``%P`` as a path in the tier: the project tier's paths start with ``.okf/``."""
    prefix = PROJECT_PREFIX + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def _git_merge_file(environ: Mapping[str, str], base: Path, ours: Path, theirs: Path, marker_size: int) -> bool:
    """git's text merge of the three files into ``ours`` (what git does without a driver);
    True when it left conflicts, or when even git could not merge (``ours`` unchanged)."""
    args = ["merge-file", f"--marker-size={marker_size}"]
    for label in LABELS:
        args += ["-L", label]
    try:
        proc = _git(environ, args + [str(ours), str(base), str(theirs)])
    except IntegrityError:
        return True
    return proc != 0


def _text_merge(environ: Mapping[str, str], marker_size: int) -> merging.TextMerge:
    """git's text merge of three pieces of text (``git merge-file -p``): the merged bytes and
    whether conflict markers were left."""

    def run(base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes, bool]:
        import tempfile  # only when both sides changed a piece of text

        with tempfile.TemporaryDirectory(prefix="okfgit-merge-") as folder:
            files = []
            for name, data in zip(LABELS, (ours, base, theirs)):
                file = os.path.join(folder, name)
                with open(file, "wb") as out:
                    out.write(data)
                files.append(file)
            args = ["merge-file", "-p", f"--marker-size={marker_size}"]
            for label in LABELS:
                args += ["-L", label]
            output: list[bytes] = []
            code = _git(environ, args + files, output)
        if code < 0 or code > 127:
            raise IntegrityError(f"git merge-file failed (exit {code})")
        return output[0], code > 0

    return run


def _git(environ: Mapping[str, str], args: list[str], output: list[bytes] | None = None) -> int:
    from okfgit.git import command  # only when git's text merge is needed

    done = command.run(["git", *args], environ)
    if output is not None:
        output.append(done.stdout)
    return done.code
