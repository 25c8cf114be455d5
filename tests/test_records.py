"""okfgit.records makes the record classes dataclasses would, for what okfgit's records use."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from okfgit import records


def _pair(frozen: bool) -> tuple[type, type]:
    """The same class made by ``dataclasses`` and by ``records``."""
    made = []
    for decorate, field in ((dataclasses.dataclass(frozen=frozen), dataclasses.field),
                            (records.record(frozen=frozen), records.field)):
        class Point:
            """A point."""

            name: str
            x: int = 0
            tags: list[str] = field(default_factory=list)
            seen: int = field(default=5, init=False)
            note: str = field(default="", repr=False, compare=False)

        made.append(decorate(Point))
    return made[0], made[1]


@pytest.mark.parametrize("frozen", [False, True])
def test_a_record_behaves_as_the_dataclass(frozen: bool) -> None:
    dc, rec = _pair(frozen)
    for args, kwargs in (((), {"name": "a"}), (("a", 2), {}), (("a",), {"x": 3, "tags": ["t"]})):
        a, b = dc(*args, **kwargs), rec(*args, **kwargs)
        assert repr(a) == repr(b)
        assert [getattr(a, f) for f in ("name", "x", "tags", "seen", "note")] == \
            [getattr(b, f) for f in ("name", "x", "tags", "seen", "note")]
        assert (dc(*args, **kwargs, note="n") == a) and (rec(*args, **kwargs, note="n") == b)  # note: not compared
        assert (a == dc(*args, **kwargs)) and (b == rec(*args, **kwargs))
        assert b != rec("other") and (b == a) is False  # another class is never equal
        assert records.asdict(b) == dataclasses.asdict(a)
        assert records.replace(b, x=9) == rec(b.name, 9, b.tags)
    assert rec("a").tags is not rec("a").tags  # each instance its own list
    with pytest.raises(TypeError):
        rec()
    with pytest.raises(TypeError):
        rec("a", seen=1)  # init=False
    if frozen:
        for made in (dc, rec):  # hashed by its fields (this one holds a list: unhashable, like the dataclass)
            with pytest.raises(TypeError, match="unhashable"):
                hash(made("a", 1))
        assert hash(_Module("x", (1,))) == hash(_Module("x", (1,))) == hash(("x", (1,)))
        with pytest.raises(records.FrozenInstanceError):
            rec("a").x = 2
        with pytest.raises(AttributeError):
            del rec("a").x
    else:
        assert rec.__hash__ is None and dc.__hash__ is None
        b = rec("a")
        b.x = 4
        assert b.x == 4


def test_post_init_and_pickle() -> None:
    @records.record
    class Counted:
        items: list[int]
        total: int = records.field(init=False)

        def __post_init__(self) -> None:
            self.total = sum(self.items)

    assert Counted([1, 2]).total == 3
    assert pickle.loads(pickle.dumps(_Module("x", [1]))) == _Module("x", [1])


@records.record(frozen=True)
class _Module:
    name: str
    items: object


def test_a_field_without_a_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default"):
        @records.record
        class Bad:
            a: int = 0
            b: int


def test_methods_are_compiled_on_first_use_from_any_thread_or_subclass() -> None:
    import threading

    @records.record(frozen=True)
    class Lazy:
        a: int
        b: list[int] = records.field(default_factory=list, compare=False)

    class Child(Lazy):
        pass

    assert Lazy.__init__.__code__.co_varnames[:3] == ("self", "args", "kwargs")  # a stub until first called
    made: list[object] = []
    threads = [threading.Thread(target=lambda: made.append(Child(1))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert made == [Child(1)] * 8 and Lazy(1) != made[0]
    assert repr(made[0]).endswith(".Child(a=1, b=[])") and hash(made[0]) == hash((1,))
    assert Lazy.__init__.__code__.co_varnames[:2] == ("self", "a")  # the compiled method replaced the stub
    with pytest.raises(records.FrozenInstanceError):
        made[0].a = 2  # type: ignore[misc]
