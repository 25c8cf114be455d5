"""Counted nouns in what okfgit prints: ``1 concept``, ``2 concepts``, never ``1 concepts``."""

from __future__ import annotations


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` agreeing: ``plural(1, "concept")`` is ``1 concept``, ``plural(3,
    "concept")`` ``3 concepts``; ``many`` where adding an ``s`` is not the plural
    (``plural(2, "index", "indexes")``). Thousands are grouped (``10,000 concepts``)."""
    return f"{n:,} {word if n == 1 else many or word + 's'}"
