"""Record classes, as ``dataclasses`` makes them, for less than a third of the start-up cost.

``@dataclass`` generates each method by compiling its own source (``__init__``, ``__repr__``,
``__eq__`` and, frozen, ``__setattr__``, ``__delattr__``, ``__hash__``) and inspects the
class besides: about 1 ms a class on this machine, and a git hook or a read verb imports a
few dozen of them before doing anything. ``@record`` compiles one source for all of a
class's methods, and only when one of them is first called (a run makes instances of a few
of the classes it imports; the check that fields without defaults come first is made at
once). It does what okfgit's records use of dataclasses and nothing more: fields
from annotations in order, defaults, ``field(default_factory=..., init=False)``,
``__post_init__``, ``frozen=True`` (assignment raises ``FrozenInstanceError``, instances
hash by their fields), equality and repr by field; ``replace`` and ``asdict`` as
``dataclasses`` has them. Type checkers read ``@record`` as a dataclass
(``typing.dataclass_transform``).
"""

from __future__ import annotations

import _thread
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")
_FIELDS = "__record_fields__"
_INIT = "__record_init__"  # the fields __init__ takes


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen record."""


class _Field:
    __slots__ = ("default", "factory", "init", "repr", "compare")

    def __init__(self, default: Any, factory: Callable[[], Any] | None, init: bool, repr: bool,
                 compare: bool) -> None:
        self.default, self.factory, self.init, self.repr, self.compare = default, factory, init, repr, compare


_NOTHING: Any = object()


def field(*, default: Any = _NOTHING, default_factory: Callable[[], Any] | None = None, init: bool = True,
          repr: bool = True, compare: bool = True) -> Any:  # noqa: A002 - dataclasses' own names
    """A field's default (``default`` or ``default_factory``); ``init``, ``repr``, ``compare``:
    whether ``__init__`` takes it, the repr shows it, equality and the hash count it."""
    return _Field(default, default_factory, init, repr, compare)


@overload
def record(cls: type[T], /) -> type[T]: ...


@overload
def record(*, frozen: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(field,))
def record(cls: type[T] | None = None, /, *, frozen: bool = False) -> Any:
    """Make ``cls`` a record class (see the module docstring)."""
    def make(cls: type[T]) -> type[T]:
        return _build(cls, frozen)
    return make if cls is None else make(cls)


def _build(cls: type[T], frozen: bool) -> type[T]:
    names = list(cls.__dict__.get("__annotations__", {}))
    env: dict[str, Any] = {"_object_setattr": object.__setattr__, "_cls": cls}
    params: list[str] = []
    body: list[str] = []
    takes: list[str] = []
    shown_names: list[str] = []
    compared: list[str] = []
    for name in names:
        spec = cls.__dict__.get(name, _NOTHING)
        if isinstance(spec, _Field):
            default, factory, init = spec.default, spec.factory, spec.init
            if spec.repr:
                shown_names.append(name)
            if spec.compare:
                compared.append(name)
            delattr(cls, name)  # the instance holds the value; a class attribute would shadow nothing
            if default is not _NOTHING:
                setattr(cls, name, default)
        else:
            default, factory, init = spec, None, True
            shown_names.append(name)
            compared.append(name)
        if init:
            takes.append(name)
        if factory is not None:
            env[f"_f_{name}"] = factory
            value = f"_f_{name}()"
            if init:
                params.append(f"{name}=_missing")
                value = f"_f_{name}() if {name} is _missing else {name}"
        elif init:
            if default is not _NOTHING:
                env[f"_d_{name}"] = default
                params.append(f"{name}=_d_{name}")
            elif any("=" in p for p in params):
                raise TypeError(f"{cls.__name__}: field {name!r} without a default follows one with a default")
            else:
                params.append(name)
            value = name
        elif default is not _NOTHING:
            env[f"_d_{name}"] = default
            value = f"_d_{name}"
        else:
            continue  # init=False without a default: __post_init__ sets it
        body.append(f"  _object_setattr(self, {name!r}, {value})" if frozen else f"  self.{name} = {value}")
    env["_missing"] = _NOTHING
    if "__post_init__" in cls.__dict__:
        body.append("  self.__post_init__()")
    fields = tuple(names)
    this = "(" + "".join(f"self.{n}," for n in compared) + ")"
    other = "(" + "".join(f"other.{n}," for n in compared) + ")"
    shown = ", ".join(f"{n}={{self.{n}!r}}" for n in shown_names)
    source = [
        f"def __init__(self, {', '.join(params)}):" if params else "def __init__(self):",
        *(body or ["  pass"]),
        "def __repr__(self):",
        f"  return f'{{type(self).__qualname__}}({shown})'",
        "def __eq__(self, other):",
        "  if other.__class__ is not self.__class__:",
        "    return NotImplemented",
        f"  return {this} == {other}",
    ]
    if frozen:
        source += [
            "def __hash__(self):",
            f"  return hash({this})",
        ]
    methods = ("__init__", "__repr__", "__eq__", *(("__hash__",) if frozen else ()))
    _PENDING[cls] = ("\n".join(source), env, methods)
    for method in methods:
        setattr(cls, method, _stub(cls, method))
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign,assignment]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign,assignment]
    if not frozen:
        cls.__hash__ = None  # type: ignore[assignment]  # mutable and equal by value: unhashable, as a dataclass
    setattr(cls, _FIELDS, fields)
    setattr(cls, _INIT, tuple(takes))
    setattr(cls, "__match_args__", fields)
    return cls


# A class's methods are compiled when one of them is first called, not when its module is
# imported: a run imports dozens of record classes and makes instances of a few.
_PENDING: dict[type, tuple[str, dict[str, Any], tuple[str, ...]]] = {}
_COMPILING = _thread.allocate_lock()


def _stub(cls: type, method: str) -> Callable[..., Any]:
    def stub(self: Any, *args: Any, **kwargs: Any) -> Any:
        _compile(cls)
        return cls.__dict__[method](self, *args, **kwargs)
    stub.__name__, stub.__qualname__ = method, f"{cls.__qualname__}.{method}"
    return stub


def _compile(cls: type) -> None:
    """Replace ``cls``'s stubs by the methods made from its source (once, in any thread)."""
    with _COMPILING:
        pending = _PENDING.pop(cls, None)
        if pending is None:
            return  # compiled already
        source, env, methods = pending
        exec(source, env)  # noqa: S102 - source built by _build from the class's own field names
        for method in methods:
            function = env[method]
            function.__qualname__ = f"{cls.__qualname__}.{method}"
            setattr(cls, method, function)


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def fields_of(cls: type) -> tuple[str, ...]:
    """The record class's field names, in order."""
    names: tuple[str, ...] = getattr(cls, _FIELDS)
    return names


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes`` (``dataclasses.replace``)."""
    takes: tuple[str, ...] = getattr(type(obj), _INIT)
    values = {name: getattr(obj, name) for name in takes}
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: Any) -> dict[str, Any]:
    """The record's fields and values, records inside it too (``dataclasses.asdict``)."""
    fields: tuple[str, ...] = getattr(type(obj), _FIELDS)
    return {name: _plain(getattr(obj, name)) for name in fields}


def _plain(value: Any) -> Any:
    if hasattr(type(value), _FIELDS):
        return asdict(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
