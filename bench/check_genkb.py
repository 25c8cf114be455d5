#!/usr/bin/env python3
"""Validate a KB produced by genkb.py (needs PyYAML; a dev check, not a benchmark).

Checks: every concept parses as YAML frontmatter with a non-empty ``type`` and
the profile keys in order; bodies < 4 KB; LF only, trailing newline; every
markdown link (relative or bundle-absolute) resolves to an existing file;
every ``index.md`` has no frontmatter (except the root's ``okf_version``), a
heading, and lists exactly its folder's concepts (sorted) and subfolders.

    python bench/check_genkb.py [--n 100 --n 10000] [--seed 0]   # generate + check
    python bench/check_genkb.py --kb PATH                        # check an existing KB
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import genkb  # noqa: E402

KEYS = ["type", "title", "description", "tags", "scope", "okf_id", "okf_source"]
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
ENTRY = re.compile(r"^- \[([^\]]+)\]\(([^)\s]+)\) — (.+\.)$")


def check_kb(root: Path, *, scope: str | None = None) -> list[str]:
    errors: list[str] = []
    n_concepts = 0
    total = sum(1 for p in root.rglob("concept-*.md"))
    for path in sorted(root.rglob("*.md")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        rel = path.relative_to(root).as_posix()
        raw = path.read_bytes()
        if b"\r" in raw:
            errors.append(f"{rel}: CR in file")
        if not raw.endswith(b"\n") or raw.endswith(b"\n\n"):
            errors.append(f"{rel}: must end with exactly one newline")
        text = raw.decode("utf-8")
        for _, href in LINK.findall(text):
            target = root / href.lstrip("/") if href.startswith("/") else path.parent / href
            if not target.resolve().is_file() or root.resolve() not in target.resolve().parents:
                errors.append(f"{rel}: broken link {href}")
        if path.name == "index.md":
            errors += check_index(root, path)
            continue
        n_concepts += 1
        if not text.startswith("---\n"):
            errors.append(f"{rel}: no frontmatter")
            continue
        fm_text, _, body = text[4:].partition("\n---\n")
        meta = yaml.safe_load(fm_text)
        if not isinstance(meta, dict) or not isinstance(meta.get("type"), str) or not meta["type"]:
            errors.append(f"{rel}: frontmatter lacks a non-empty type")
            continue
        if list(meta) != KEYS:
            errors.append(f"{rel}: key order {list(meta)}")
        for k in ("title", "description", "scope", "okf_id", "okf_source"):
            if not isinstance(meta[k], str):
                errors.append(f"{rel}: {k} is not a string: {meta[k]!r}")
        desc = meta["description"]
        if not desc.endswith(".") or desc.count(".") != 1:
            errors.append(f"{rel}: description is not one sentence: {desc!r}")
        tags = meta["tags"]
        if not (isinstance(tags, list) and 1 <= len(tags) <= 3 and len(set(tags)) == len(tags)
                and all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", t) for t in tags)):
            errors.append(f"{rel}: bad tags {tags!r}")
        if scope is not None and meta["scope"] != scope:
            errors.append(f"{rel}: scope {meta['scope']!r}")
        if meta["okf_source"] != "authored":
            errors.append(f"{rel}: okf_source {meta['okf_source']!r}")
        lines = [ln for ln in body.strip("\n").split("\n") if ln]
        if not 3 <= len(lines) <= 15:
            errors.append(f"{rel}: body has {len(lines)} lines")
        if len(body.encode()) >= 4096:
            errors.append(f"{rel}: body is {len(body.encode())} bytes")
        links = LINK.findall(body)
        if not (1 if total > 1 else 0) <= len(links) <= 3:
            errors.append(f"{rel}: {len(links)} links")
    if n_concepts == 0:
        errors.append("no concepts")
    return errors


def check_index(root: Path, path: Path) -> list[str]:
    rel = path.relative_to(root).as_posix()
    errors: list[str] = []
    text = path.read_text("utf-8")
    is_root = path.parent == root
    if is_root:
        head = '---\nokf_version: "0.2"\n---\n\n'
        if not text.startswith(head):
            return [f"{rel}: root index lacks okf_version frontmatter"]
        if yaml.safe_load(text[4: len(head) - 5]) != {"okf_version": "0.2"}:
            errors.append(f"{rel}: okf_version not the string 0.2")
        text = text[len(head):]
    elif text.startswith("---"):
        errors.append(f"{rel}: non-root index has frontmatter")
    lines = text.split("\n")
    if not lines[0].startswith("# ") or lines[1] != "":
        errors.append(f"{rel}: no heading + blank line")
    listed: list[str] = []
    for ln in lines[2:-1]:
        m = ENTRY.match(ln)
        if not m:
            errors.append(f"{rel}: bad entry {ln!r}")
            continue
        listed.append(m.group(2))
    concepts = sorted(p.name for p in path.parent.glob("*.md") if p.name != "index.md")
    subdirs = sorted(f"{d.name}/index.md" for d in path.parent.iterdir()
                     if d.is_dir() and not d.name.startswith("."))
    if listed != concepts + subdirs:
        errors.append(f"{rel}: index lists {len(listed)} entries, folder has "
                      f"{len(concepts)} concepts + {len(subdirs)} subfolders (or wrong order)")
    for c in concepts:  # entry title/description match the concept's frontmatter
        fm = yaml.safe_load((path.parent / c).read_text("utf-8")[4:].partition("\n---\n")[0])
        want = f"- [{fm['title']}]({c}) — {fm['description']}"
        if want not in lines:
            errors.append(f"{rel}: entry for {c} does not match its frontmatter")
    return errors


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, action="append")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kb", type=Path)
    args = p.parse_args()
    if args.kb:
        errs = check_kb(args.kb)
        print("\n".join(errs[:50]) or f"{args.kb}: OK")
        return 1 if errs else 0
    failed = False
    for n in args.n or [100, 10_000]:
        with tempfile.TemporaryDirectory() as tmp:
            kb = Path(tmp) / "kb"
            t0 = time.perf_counter()
            paths = genkb.generate(kb, n, scope="project", seed=args.seed)
            gen_s = time.perf_counter() - t0
            errs = check_kb(kb, scope="project")
            if len(paths) != n or len(list(kb.rglob("concept-*.md"))) != n:
                errs.append(f"expected {n} concepts")
            sizes = [len(list(d.glob("concept-*.md"))) for d in kb.glob("*/*") if d.is_dir()]
            again = Path(tmp) / "again"
            genkb.generate(again, n, scope="project", seed=args.seed)
            for f in kb.rglob("*.md"):
                if f.read_bytes() != (again / f.relative_to(kb)).read_bytes():
                    errs.append(f"not deterministic: {f.relative_to(kb)}")
                    break
            print(f"n={n}: generate {gen_s:.3f}s, {len(sizes)} leaf folders "
                  f"({min(sizes)}-{max(sizes)} concepts each), "
                  f"{'OK' if not errs else f'{len(errs)} errors'}")
            for e in errs[:20]:
                print("  " + e)
            failed |= bool(errs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
