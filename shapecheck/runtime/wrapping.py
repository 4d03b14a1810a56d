"""``checked``: jaxtyping + beartype on a function or a class, with a cache of validated calls.

A checked call does, in order:

1. Nothing but call the function when checks are off (``set_enabled(False)``) or while
   ``torch.compile`` / dynamo traces it (checks step aside: no graph break, no recompilation).
2. Compute the call's key (``keys.py``: argument types, dtypes and shapes, the module's sizes).
   A key never seen runs the full check: ``jaxtyped(typechecker=beartype)`` with the module's sizes
   bound first, around the real call. A key already validated calls the function directly.
3. Check the return value the same way: a (call key, result key) pair already validated is
   skipped; a new one is checked in full, against the same arguments, without calling again.

Equal keys mean equal verdicts, so the cache changes the cost, never the outcome. A failed check
raises ``ShapeCheckError`` (a ``jaxtyping.TypeCheckError``) with a one-line message (``errors.py``).
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from beartype import BeartypeConf, beartype
from jaxtyping import TypeCheckError, jaxtyped

from shapecheck.runtime import keys, sizes
from shapecheck.runtime.keys import ATOMS, BY_STRUCTURE, BY_TYPE, value_key
from shapecheck.runtime.sizes import SIZES_ATTRIBUTE
from shapecheck.runtime.dims import dim_names
from shapecheck.runtime.errors import ShapeCheckError, build_message, where_defined
from shapecheck.runtime.switch import SWITCH, disabled_by_environment

T = TypeVar("T")

#: Validated keys kept per function before the cache starts over.
CACHE_LIMIT = 4096

# PEP 484's numeric tower: an int is accepted where a float is annotated (dropout=0, lr=1).
_beartype = beartype(conf=BeartypeConf(is_pep484_tower=True))
_SELF = "self"  # key mode of a method's first parameter
_SKIPPED_METHODS = frozenset({"__init_subclass__", "__class_getitem__", "__new__", "__getattr__", "__setattr__"})


class ShapeCheckWarning(UserWarning):
    """An annotation shapecheck cannot check (it is reported once, and that parameter is skipped)."""


def _is_compiling_function() -> Callable[[], bool]:
    try:
        import torch
    except ImportError:  # pragma: no cover
        return lambda: False
    return torch.compiler.is_compiling


_is_compiling = _is_compiling_function()


def checked(target: T) -> T:
    """Check ``target``'s jaxtyping annotations with beartype on every call.

    ``target`` is a function, or a class (every annotated method is checked; an ``nn.Module``
    class also records its int constructor arguments so that they are bound as sizes).
    With ``SHAPECHECK_RUNTIME=0`` in the environment, ``target`` is returned unchanged.
    """
    if disabled_by_environment():
        return target
    if isinstance(target, type):
        return checked_class(target)  # type: ignore[return-value]
    return checked_function(target)  # type: ignore[return-value]


def checked_class(cls: type) -> type:
    """Check every annotated method defined in ``cls``'s own body."""
    for name, member in list(vars(cls).items()):
        if name in _SKIPPED_METHODS:
            continue
        if isinstance(member, (staticmethod, classmethod)):
            wrapped = checked_function(member.__func__)
            if wrapped is not member.__func__:
                setattr(cls, name, type(member)(wrapped))
        elif inspect.isfunction(member):
            wrapped = checked_function(member)
            if wrapped is not member:
                setattr(cls, name, wrapped)
    if _is_module_class(cls):
        sizes.record_constructor_sizes(cls)
    return cls


def _is_module_class(cls: type) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and issubclass(cls, torch.nn.Module)


def checked_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` wrapped so that its annotations are checked on every call (unchanged if it has none)."""
    if getattr(fn, "__shapecheck_checked__", False) or getattr(fn, "__no_type_check__", False):
        return fn
    if not getattr(fn, "__annotations__", None) or not callable(fn):
        return fn
    checker = _Checker(fn)
    is_compiling = _is_compiling
    switch = SWITCH
    # Filled in by the first checked call (the module is fully imported by then); until then
    # `cache` is None and every call goes through `checker.call`.
    cache: dict[Any, set[Any]] | None = None
    modes: tuple[str, ...] = ()
    size_names: tuple[str, ...] = ()
    arrays: tuple[type, ...] = ()
    check_return = False

    keyword_modes: dict[str, str] = {}

    def prepare() -> None:
        nonlocal cache, modes, size_names, arrays, check_return, keyword_modes
        checker.prepare()
        cache, modes, size_names = checker.cache, tuple(checker.modes), checker.size_names
        arrays, check_return, keyword_modes = checker.arrays, checker.check_return, checker.keyword_modes

    checker.on_prepared = prepare

    @functools.wraps(fn)
    def checked_call(*args: Any, **kwargs: Any) -> Any:
        # The steady-state path, inline: key positional arrays and `self` exactly as
        # `_Checker.key` does, find a validated entry, call, check the result's key.
        if not switch.on or is_compiling():
            return fn(*args, **kwargs)
        if cache is None or len(args) > len(modes):
            return checker.call(args, kwargs)
        parts: list[Any] = []
        append = parts.append
        for value, mode in zip(args, modes):
            if mode is _SELF:
                append(type(value))
                namespace = getattr(value, "__dict__", None) or {}
                parts.extend(map(namespace.get, size_names))
                recorded = namespace.get(SIZES_ATTRIBUTE)
                append(recorded is not None)
                if recorded is not None:
                    parts.extend(map(recorded.get, size_names))
            elif isinstance(value, arrays):
                append(type(value))
                if mode is BY_STRUCTURE:
                    append(value.dtype)
                    append(value.shape)
            else:
                return checker.call(args, kwargs)
        if kwargs:
            for name, value in kwargs.items():
                append(name)
                if keyword_modes.get(name) is BY_TYPE:
                    append(type(value))
                elif isinstance(value, arrays):
                    append((type(value), value.dtype, value.shape))
                elif type(value) in ATOMS:
                    append((type(value), value))
                else:
                    return checker.call(args, kwargs)
        try:
            validated_results = cache.get(tuple(parts))
        except TypeError:
            validated_results = None
        if validated_results is None:
            return checker.call(args, kwargs)
        result = fn(*args, **kwargs)
        if check_return:
            if isinstance(result, arrays):
                result_key: Any = (type(result), result.dtype, result.shape)
            elif type(result) is tuple and len(result) == 2 and isinstance(result[0], arrays) and isinstance(result[1], arrays):
                first, second = result  # (out, weights): the common pair, keyed as value_key does
                result_key = (
                    tuple,
                    ((type(first), first.dtype, first.shape), (type(second), second.dtype, second.shape)),
                )
            else:
                result_key = value_key(result, arrays)
            if result_key is None or result_key not in validated_results:
                checker.check_result(result, result_key, validated_results, args)
        return result

    checked_call.__shapecheck_checked__ = True  # type: ignore[attr-defined]
    return checked_call


class _Stash(threading.local):
    """The value a generated signature function returns (the real result, checked after the call)."""

    value: Any = None


class _Checker:
    """The checking machinery of one function, prepared on its first checked call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.prepared = False
        self.on_prepared: Callable[[], None] | None = None

    # -- preparation (once, at the first call: the module is fully imported by then) -------------

    def prepare(self) -> None:
        fn = self.fn
        signature = inspect.signature(fn)
        annotations, problems = _resolve_annotations(fn, signature)
        if problems:
            warnings.warn(
                f"shapecheck: {fn.__qualname__} ({where_defined(fn)}) is checked without "
                + "; ".join(problems),
                ShapeCheckWarning,
                stacklevel=4,
            )
        if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            annotations.pop("return", None)  # the value returned is a generator or a coroutine
        params = list(signature.parameters.values())
        self.names = [p.name for p in params]
        self.signature = signature
        self.annotations = annotations
        self.check_return = "return" in annotations
        self.size_names: tuple[str, ...] = ()
        is_method = bool(params) and params[0].name == "self" and "self" not in annotations
        if is_method:
            self.size_names = tuple(dict.fromkeys(n for a in annotations.values() for n in dim_names(a)))
        new_params = [p.replace(annotation=annotations.get(p.name, inspect.Parameter.empty)) for p in params]
        binder = sizes.binder_type(self.size_names) if self.size_names else None
        if binder is not None:
            new_params[0] = new_params[0].replace(annotation=binder)
        checked_signature = signature.replace(
            parameters=new_params, return_annotation=annotations.get("return", inspect.Signature.empty)
        )
        self.stash = _Stash()
        self.full = jaxtyped(typechecker=_beartype)(self._with_signature(self._call_and_stash, checked_signature))
        self.return_only = jaxtyped(typechecker=_beartype)(self._with_signature(self._stashed, checked_signature))
        self.modes = self._key_modes(params, is_method)
        self.keyword_modes = {p.name: keys.key_mode(annotations.get(p.name)) for p in params}
        self.arrays = keys.array_base_types()
        self.cache: dict[Any, set[Any]] = {}
        self.prepared = True

    def _key_modes(self, params: list[inspect.Parameter], is_method: bool) -> list[str]:
        modes = []
        for index, p in enumerate(params):
            if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                break
            modes.append(_SELF if is_method and index == 0 else keys.key_mode(self.annotations.get(p.name)))
        return modes

    def _with_signature(self, body: Callable[..., Any], signature: inspect.Signature) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return body(*args, **kwargs)

        for attribute in ("__name__", "__qualname__", "__module__"):
            setattr(call, attribute, getattr(self.fn, attribute, "?"))
        call.__signature__ = signature  # type: ignore[attr-defined]
        return call

    def _call_and_stash(self, *args: Any, **kwargs: Any) -> Any:
        result = self.fn(*args, **kwargs)
        self.stash.value = result
        return result

    def _stashed(self, *args: Any, **kwargs: Any) -> Any:
        return self.stash.value

    # -- calls --------------------------------------------------------------------------------

    def check_result(self, result: Any, result_key: Any, validated_results: set[Any], args: tuple[Any, ...]) -> None:
        """Check a result whose key this call's arguments have not seen yet (the call is not repeated)."""
        self.stash.value = result
        self.check(self.return_only, args, {})
        if result_key is not None:
            validated_results.add(result_key)

    def call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A checked call, any arguments; the wrapper's inline path handles the common case."""
        if not self.prepared:
            if self.on_prepared is not None:
                self.on_prepared()
            else:
                self.prepare()
        key = self.key(args, kwargs)
        try:
            validated_results = self.cache.get(key) if key is not None else None
        except TypeError:  # an unhashable attribute named like a dim: no key
            key = validated_results = None
        if validated_results is None:
            result = self.check(self.full, args, kwargs)
            if key is not None:
                if len(self.cache) >= CACHE_LIMIT:
                    self.cache.clear()
                result_key = value_key(result, self.arrays) if self.check_return else None
                self.cache[key] = {result_key} if result_key is not None else set()
            return result
        result = self.fn(*args, **kwargs)
        if self.check_return:
            result_key = value_key(result, self.arrays)
            if result_key is None or result_key not in validated_results:
                self.stash.value = result
                self.check(self.return_only, args, kwargs)
                if result_key is not None:
                    validated_results.add(result_key)
        return result

    def key(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The call's cache key, or None when some argument has none.

        Flat: each value adds items that start with its type, and the type fixes how many follow
        (an array: dtype and shape; anything else: one item), so two different calls never share
        a key.
        """
        modes, arrays = self.modes, self.arrays
        if len(args) > len(modes):
            modes = modes + [BY_STRUCTURE] * (len(args) - len(modes))
        parts: list[Any] = []
        append = parts.append
        for value, mode in zip(args, modes):
            if mode is BY_STRUCTURE:
                if isinstance(value, arrays):
                    append(type(value))
                    append(value.dtype)
                    append(value.shape)  # torch.Size hashes and compares as a tuple
                    continue
                part = value_key(value, arrays)
                if part is None:
                    return None
                append(part)
            elif mode is BY_TYPE:
                append(type(value))
            else:  # self: its type and the sizes bound from it
                append(type(value))
                namespace = getattr(value, "__dict__", None) or {}
                parts.extend(map(namespace.get, self.size_names))
                recorded = namespace.get(SIZES_ATTRIBUTE)
                append(recorded is not None)
                if recorded is not None:
                    parts.extend(map(recorded.get, self.size_names))
        if kwargs:
            keyword_modes = self.keyword_modes
            for name, value in kwargs.items():
                append(name)
                if keyword_modes.get(name) is BY_TYPE:
                    append(type(value))
                else:
                    part = value_key(value, arrays)
                    if part is None:
                        return None
                    append(part)
        return tuple(parts)

    def check(self, checker: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run a jaxtyped checker; turn its failure (not one from inside the call) into our error."""
        try:
            return checker(*args, **kwargs)
        except ShapeCheckError:
            raise
        except TypeCheckError as error:
            message = str(error)
            first_line = message.split("\n", 1)[0]
            own_name = f"{self.fn.__module__}.{self.fn.__qualname__}"
            if not first_line.startswith("Type-check error whilst checking") or own_name not in first_line:
                raise  # a jaxtyping error from inside the function: not ours to rewrite
            raise self.error(message, args, kwargs, returned="return value" in first_line) from None

    def error(self, message: str, args: tuple[Any, ...], kwargs: dict[str, Any], returned: bool) -> ShapeCheckError:
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        instance = arguments.get(self.names[0]) if self.size_names else None
        text = build_message(
            self.fn,
            returned=returned,
            arguments=arguments,
            annotations=self.annotations,
            sizes=sizes.known_sizes(instance, self.size_names) if instance is not None else {},
            result=self.stash.value if returned else None,
            jaxtyping_message=message,
        )
        return ShapeCheckError(text, jaxtyping_message=message)


def _resolve_annotations(fn: Callable[..., Any], signature: inspect.Signature) -> tuple[dict[str, Any], list[str]]:
    """Annotations by name, strings evaluated in the function's module; problems with the rest."""
    raw = {p.name: p.annotation for p in signature.parameters.values() if p.annotation is not p.empty}
    if signature.return_annotation is not signature.empty:
        raw["return"] = signature.return_annotation
    namespace = getattr(fn, "__globals__", {})
    resolved, problems = {}, []
    for name, annotation in raw.items():
        what = "the return value" if name == "return" else f"parameter {name!r}"
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)  # noqa: S307 - how typing.get_type_hints resolves
            except SyntaxError:
                problems.append(f"{what}: its annotation {annotation!r} is a plain string, not a type")
                continue
            except Exception as exc:  # noqa: BLE001 - NameError for TYPE_CHECKING imports, and worse
                problems.append(f"{what}: its annotation {annotation!r} does not resolve ({type(exc).__name__}: {exc})")
                continue
            if isinstance(annotation, str):  # `x: "b t d"` under `from __future__ import annotations`
                problems.append(f"{what}: its annotation {annotation!r} is a plain string, not a type")
                continue
        resolved[name] = annotation
    return resolved, problems
