"""The git layer: the one place okfgit reads and writes git repositories.

Split by noun, as dulwich's object model and pre-commit's one ``cmd_output`` are:

- ``objects``: what every reader returns (``Entry``, ``Change``) and ``blob_oid``; standard
  library only, so the no-op paths may use it without loading libgit2;
- ``repository``: ``Repo``, a repository with a working tree, read through pygit2: refs,
  trees at a revision, blobs, tree diffs, history, and the writes below as its methods;
- ``commit``: trees and commits built from changed blobs, the branch moved by
  compare-and-swap (``RefMoved`` when it lost), the working tree and index updated after;
- ``index``: git's ``index.lock`` held from reading the index to replacing it;
- ``recovery``: finishing what a killed write left, from the write journal (``local/journal``);
- ``command``: the git command line, started in one place with one environment rule, where
  libgit2 would differ from the user's git (transport, config with includes, the index's
  stat data, hooks) and for ``gh``.

pygit2 is imported by ``repository``, ``commit``, ``index`` and ``recovery`` only; nothing
outside this package imports it or touches its private attributes (``tests/test_layout.py``).
"""
