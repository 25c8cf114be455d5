"""Three-way merges of one tier file by what it means (format/merge.py): bytes in, bytes out.

The merge driver (tests/test_merge_driver.py) runs these inside real git merges; here each
rule is pinned on exact bytes, and the index merge is held to the index's own regeneration.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from okfgit.errors import ValidationError
from okfgit.format import index_md as index
from okfgit.format import merge
from tests.conftest import examples

INTRO = "# Decisions\n\nWhy the system is the way it is.\n"


def page(names: list[str], intro: str = INTRO, outro: str = "", subfolders: dict[str, str] | None = None,
         words: dict[str, str] | None = None) -> bytes:
    """An index of ``decisions/`` as okfgit regenerates it."""
    items = {f"{n}.md": index.Item(n.replace("-", " ").title(), (words or {}).get(n, f"About {n}.")) for n in names}
    return index.render("decisions", intro, items, subfolders or {}, outro=outro)


def test_entries_both_sides_added_next_to_each_other_merge_in_okfgit_order() -> None:
    base = page(["alpha", "omega"])
    ours = page(["alpha", "beta", "omega"])
    theirs = page(["alpha", "gamma", "omega"])
    merged = merge.index_page(base, ours, theirs, "decisions/index.md")
    assert merged.conflicts == []
    assert merged.data == page(["alpha", "beta", "gamma", "omega"])


def test_a_removal_on_either_side_is_honoured_and_a_change_is_never_lost_to_one() -> None:
    base = page(["alpha", "beta", "omega"])
    removed_beta = page(["alpha", "omega"])
    changed_omega = page(["alpha", "beta", "omega"], words={"omega": "The last word, reworded."})
    merged = merge.index_page(base, removed_beta, changed_omega, "decisions/index.md")
    assert merged.data == page(["alpha", "omega"], words={"omega": "The last word, reworded."})
    # deleted here, changed there: the changed entry stays (the tier-level merge's rule too)
    merged = merge.index_page(base, page(["alpha", "beta"]), changed_omega, "decisions/index.md")
    assert merged.data == page(["alpha", "beta", "omega"], words={"omega": "The last word, reworded."})


def test_the_same_entry_changed_two_ways_is_a_conflict_on_that_line_alone() -> None:
    base = page(["alpha", "beta", "omega"])
    ours = page(["alpha", "beta", "omega"], words={"beta": "One way."})
    theirs = page(["alpha", "beta", "gamma", "omega"], words={"beta": "Another way."})
    merged = merge.index_page(base, ours, theirs, "decisions/index.md")
    assert merged.data.decode() == (
        "# Decisions\n\nWhy the system is the way it is.\n\n"
        "- [Alpha](alpha.md) \u2014 About alpha.\n"
        "<<<<<<< ours\n"
        "- [Beta](beta.md) \u2014 One way.\n"
        "=======\n"
        "- [Beta](beta.md) \u2014 Another way.\n"
        ">>>>>>> theirs\n"
        "- [Gamma](gamma.md) \u2014 About gamma.\n"
        "- [Omega](omega.md) \u2014 About omega.\n"
    )
    assert merged.conflicts == ["the entry '- [Beta](beta.md) \u2014 One way.' changed two ways"]


def test_the_hand_written_text_around_the_entries_is_kept_from_both_sides() -> None:
    outro = "\n## See also\n\n- [The handbook](https://example.com/handbook)\n"
    base = page(["alpha"], outro=outro)
    ours = page(["alpha", "beta"], intro="# Decisions\n\nWhy the system is the way it is, and who decided.\n",
                outro=outro)
    theirs = page(["alpha", "gamma"], outro=outro + "\nAsk in #arch before adding one.\n")
    merged = merge.index_page(base, ours, theirs, "decisions/index.md")
    assert merged.data == page(["alpha", "beta", "gamma"],
                               intro="# Decisions\n\nWhy the system is the way it is, and who decided.\n",
                               outro=outro + "\nAsk in #arch before adding one.\n")


def test_both_sides_changing_the_intro_two_ways_leave_it_to_the_text_merge() -> None:
    base = page(["alpha"])
    ours = page(["alpha", "beta"], intro="# Decisions\n\nOurs.\n")
    theirs = page(["alpha", "gamma"], intro="# Decisions\n\nTheirs.\n")
    seen: list[tuple[bytes, bytes, bytes]] = []

    def text(b: bytes, o: bytes, t: bytes) -> tuple[bytes, bool]:
        seen.append((b, o, t))
        return b"# Decisions\n\n<<<<<<< ours\nOurs.\n=======\nTheirs.\n>>>>>>> theirs\n", True

    merged = merge.index_page(base, ours, theirs, "decisions/index.md", text=text)
    assert seen == [(INTRO.encode(), b"# Decisions\n\nOurs.\n", b"# Decisions\n\nTheirs.\n")]
    assert merged.conflicts == ["the text above the entries"]
    assert b"- [Beta](beta.md)" in merged.data and b"- [Gamma](gamma.md)" in merged.data


def test_the_root_index_takes_both_sides_new_folders() -> None:
    def root(subs: list[str]) -> bytes:
        return index.render("", "# Project knowledge\n", {}, {s: f"Concepts under {s}/." for s in subs})

    merged = merge.index_page(root(["api"]), root(["api", "billing"]), root(["api", "auth"]), "index.md")
    assert merged.data == root(["api", "auth", "billing"])
    assert merged.data.startswith(b'---\nokf_version: "0.2"\n---\n')


def test_an_index_in_a_bundles_own_grouped_form_keeps_its_form() -> None:
    base = (b"# Tables\n\n## Table\n\n* [Users](users.md) - The users.\n* [Orders](orders.md) - The orders.\n\n"
            b"## Subdirectories\n\n* [Views](views/) - Views.\n")
    ours = base.replace(b"* [Orders](orders.md) - The orders.\n",
                        b"* [Orders](orders.md) - The orders.\n* [Items](items.md) - The items.\n")
    theirs = base.replace(b"* [Users](users.md) - The users.\n",
                          b"* [Users](users.md) - The users.\n* [Carts](carts.md) - The carts.\n")
    merged = merge.index_page(base, ours, theirs, "tables/index.md")
    assert merged.data == (b"# Tables\n\n## Table\n\n* [Users](users.md) - The users.\n* [Carts](carts.md) - The carts.\n"
                           b"* [Orders](orders.md) - The orders.\n* [Items](items.md) - The items.\n\n"
                           b"## Subdirectories\n\n* [Views](views/) - Views.\n")


def test_a_crlf_index_with_a_bom_keeps_both() -> None:
    def crlf(names: list[str]) -> bytes:
        return b"\xef\xbb\xbf" + page(names).replace(b"\n", b"\r\n")

    merged = merge.index_page(crlf(["alpha"]), crlf(["alpha", "beta"]), crlf(["alpha", "gamma"]), "decisions/index.md")
    assert merged.data == crlf(["alpha", "beta", "gamma"])


@settings(max_examples=examples(200), deadline=None)
@given(st.sets(st.sampled_from("abcdefghij"), max_size=8), st.sets(st.sampled_from("abcdefghij"), max_size=8),
       st.sets(st.sampled_from("abcdefghij"), max_size=8))
def test_the_merge_of_two_sides_is_the_index_of_the_merged_folder(base: set[str], ours: set[str],
                                                                   theirs: set[str]) -> None:
    # A concept is in the merged folder when a side added it, or both kept it.
    expected = (ours & theirs) | (ours - base) | (theirs - base)
    merged = merge.index_page(page(sorted(base)), page(sorted(ours)), page(sorted(theirs)), "decisions/index.md")
    assert merged.conflicts == []
    assert merged.data == page(sorted(expected))


# -- log.md ----------------------------------------------------------------------------


def test_a_log_keeps_every_entry_of_both_sides_by_date() -> None:
    base = b"# Knowledge log\n\n## 2025-11-20\n- Added the runbook.\n\n## 2025-11-02\n- Started.\n"
    ours = (b"# Knowledge log\n\n## 2025-12-01\n- Ours, a new day.\n\n## 2025-11-20\n- Ours, the same day.\n"
            b"- Added the runbook.\n\n## 2025-11-02\n- Started.\n")
    theirs = (b"# Knowledge log\n\n## 2025-12-02\n- Theirs, a newer day.\n\n## 2025-11-20\n"
              b"- Theirs, the same day.\n  continued on a second line.\n- Added the runbook.\n\n## 2025-11-02\n- Started.\n")
    merged = merge.log_page(base, ours, theirs, "log.md")
    assert merged.conflicts == []
    assert merged.data == (b"# Knowledge log\n\n## 2025-12-02\n- Theirs, a newer day.\n\n## 2025-12-01\n"
                           b"- Ours, a new day.\n\n## 2025-11-20\n- Ours, the same day.\n- Theirs, the same day.\n"
                           b"  continued on a second line.\n- Added the runbook.\n\n## 2025-11-02\n- Started.\n")


def test_a_log_never_drops_an_entry_one_side_removed() -> None:
    base = b"# Log\n\n## 2025-11-20\n- One.\n- Two.\n"
    merged = merge.log_page(base, b"# Log\n\n## 2025-11-20\n- One.\n", b"# Log\n\n## 2025-11-20\n- Three.\n- One.\n- Two.\n",
                            "log.md")
    assert merged.data == b"# Log\n\n## 2025-11-20\n- Three.\n- One.\n- Two.\n"


def test_a_log_with_a_date_group_twice_is_left_to_git() -> None:
    with pytest.raises(ValidationError):
        merge.log_page(None, b"# Log\n\n## 2025-11-20\n- a\n\n## 2025-11-20\n- b\n", b"# Log\n", "log.md")


# -- concepts --------------------------------------------------------------------------

CONCEPT = (b"---\ntype: Decision\ntitle: Use PostgreSQL\ndescription: The ledger lives in PostgreSQL.\n"
           b"tags:\n- storage\n# the identity: never edit\nokf_id: 7f5e0002-790f-4c15-bc49-f8a9660e3c1b\n"
           b"scope: project\n---\n\n# Use PostgreSQL\n\nMulti-row transactions.\n")


def test_different_frontmatter_keys_changed_on_each_side_merge_by_key() -> None:
    ours = CONCEPT.replace(b"title: Use PostgreSQL\n", b"title: Use PostgreSQL 16\n")
    theirs = CONCEPT.replace(b"tags:\n- storage\n", b"tags:\n- storage\n- ledger\n").replace(
        b"scope: project\n", b"scope: project\nstatus: stable\n")
    merged = merge.concept(CONCEPT, ours, theirs, "decisions/db.md")
    assert merged.conflicts == []
    assert merged.data == CONCEPT.replace(b"title: Use PostgreSQL\n", b"title: Use PostgreSQL 16\n").replace(
        b"tags:\n- storage\n", b"tags:\n- storage\n- ledger\n").replace(b"scope: project\n",
                                                                         b"scope: project\nstatus: stable\n")


def test_a_body_edit_and_a_key_edit_merge() -> None:
    ours = CONCEPT.replace(b"Multi-row transactions.\n", b"Multi-row transactions, and foreign keys.\n")
    theirs = CONCEPT.replace(b"description: The ledger lives in PostgreSQL.",
                             b"description: The invoice ledger lives in PostgreSQL.")
    merged = merge.concept(CONCEPT, ours, theirs, "decisions/db.md")
    assert merged.data == ours.replace(b"description: The ledger lives in PostgreSQL.",
                                       b"description: The invoice ledger lives in PostgreSQL.")


def test_the_same_key_changed_two_ways_is_a_conflict_named_by_the_key() -> None:
    ours = CONCEPT.replace(b"description: The ledger lives in PostgreSQL.", b"description: Ours.")
    theirs = CONCEPT.replace(b"description: The ledger lives in PostgreSQL.", b"description: Theirs.").replace(
        b"title: Use PostgreSQL\n", b"title: Postgres it is\n")
    merged = merge.concept(CONCEPT, ours, theirs, "decisions/db.md")
    assert merged.conflicts == ["frontmatter key 'description' changed two ways"]
    assert merged.data == CONCEPT.replace(b"title: Use PostgreSQL\n", b"title: Postgres it is\n").replace(
        b"description: The ledger lives in PostgreSQL.\n",
        b"<<<<<<< ours (description)\ndescription: Ours.\n=======\ndescription: Theirs.\n"
        b">>>>>>> theirs (description)\n")


def test_a_verification_on_one_side_is_never_merged_with_the_others_words() -> None:
    verified = CONCEPT.replace(b"scope: project\n", b"scope: project\nverified:\n- by: human:alice\n  at: 2026-01-05\n")
    reworded = CONCEPT.replace(b"Multi-row transactions.\n", b"Multi-row transactions, mostly.\n")
    merged = merge.concept(CONCEPT, reworded, verified, "decisions/db.md")
    assert merged.data == (b"<<<<<<< ours (verified)\n" + reworded + b"=======\n" + verified
                           + b">>>>>>> theirs (verified)\n")
    assert merged.conflicts == ["one side changed verified (now human:alice) and the other changed the body: a "
                                "verification vouches only for the words it was given with"]
    # the same verification on both sides, or one side only verifying: nothing to keep apart
    assert merge.concept(CONCEPT, verified, verified, "decisions/db.md") == merge.Merged(verified, [])
    assert merge.concept(CONCEPT, CONCEPT, verified, "decisions/db.md") == merge.Merged(verified, [])


def test_a_key_only_reformatted_on_one_side_takes_the_others_meaning() -> None:
    ours = CONCEPT.replace(b"tags:\n- storage\n", b"tags: [storage]\n")
    theirs = CONCEPT.replace(b"tags:\n- storage\n", b"tags:\n- storage\n- ledger\n")
    merged = merge.concept(CONCEPT, ours, theirs, "decisions/db.md")
    assert merged.conflicts == [] and merged.data == theirs


def test_the_same_path_added_with_two_okf_ids_is_two_whole_concepts_between_markers() -> None:
    theirs = CONCEPT.replace(b"7f5e0002-790f-4c15-bc49-f8a9660e3c1b", b"0b6c1f3e-9d1a-4f7e-8c2b-5a4e3d2c1b0a")
    merged = merge.concept(None, CONCEPT, theirs, "decisions/db.md")
    assert merged.data == (b"<<<<<<< ours (two concepts)\n" + CONCEPT + b"=======\n" + theirs
                           + b">>>>>>> theirs (two concepts)\n")
    assert merged.conflicts == ["two concepts were added at decisions/db.md (okf_id 7f5e0002-790f-4c15-bc49-"
                                "f8a9660e3c1b and 0b6c1f3e-9d1a-4f7e-8c2b-5a4e3d2c1b0a): keep one here, move the "
                                "other to a new name"]


def test_a_file_that_is_not_a_concept_is_left_to_git() -> None:
    with pytest.raises(ValidationError):
        merge.concept(None, b"no frontmatter\n", b"none either\n", "notes/x.md")
    with pytest.raises(ValidationError):
        merge.merge_file(None, b"a", b"b", "schema.sql")


def test_the_tiers_gitattributes_gets_okfgits_line_once_and_keeps_a_persons() -> None:
    new = merge.attributes(None)
    assert new is not None and new.endswith(b"\n*.md merge=okfgit\n") and merge.attributes(new) is None
    assert merge.attributes(b"*.png binary") == b"*.png binary\n*.md merge=okfgit\n"
