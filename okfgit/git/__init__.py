"""The git layer: the one place okfgit reads and writes git repositories (spec/okf-layout.md).

Split by noun, as dulwich's object model and pre-commit's one ``cmd_output`` are:

- ``objects``: what every reader returns (``Entry``, ``Change``) and ``blob_oid``;
- ``repository``: ``Repo``, a repository with a working tree, read through pygit2: refs,
  trees at a revision, blobs, tree diffs, history; the writes below are its methods;
- ``commit``: trees and commits built from changed blobs, the branch moved by
  compare-and-swap (``errors.RefMoved`` when it lost), the working tree and index after;
- ``index``: git's ``index.lock`` held from reading the index to replacing it;
- ``recovery``: finishing what a killed write left, from the write journal (``local/journal``);
- ``config``: ``git config`` lookups, asked of git only when a config file could set the key;
- ``command``: ``run``, the one function that starts a process (git where libgit2 would
  differ from the user's git, and ``gh``), with one environment rule.

pygit2 is imported by ``repository``, ``commit``, ``index`` and ``recovery`` only (public API
only); ``objects``, ``command`` and ``config`` are standard library, for paths that read no
object. Nothing outside this package imports pygit2 (``tests/test_layout.py``).
"""
