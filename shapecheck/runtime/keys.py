"""Cache keys: what a call's check depends on, and nothing else.

jaxtyping + beartype decide a call from the arguments' types, and for arrays their dtypes and shapes
(never their values), plus the sizes bound from the module. Two calls with equal keys get the same
verdict, so a checked function re-runs the full check only for a key it has not validated yet.
A value whose verdict could depend on more than that (an arbitrary object checked against a
structural annotation) has no key: its calls are always checked in full.
"""

from __future__ import annotations

import abc
import sys
import typing
from typing import Any

from shapecheck.runtime.dims import is_array_type

#: Key modes for a parameter.
BY_TYPE = "type"  # the annotation is a plain class (or absent): isinstance depends on type(value) only
BY_STRUCTURE = "structure"  # arrays by (type, dtype, shape), atoms by value, tuples/lists/dicts recursively

ATOMS = frozenset({type(None), bool, int, float, str, bytes, complex})


def array_base_types() -> tuple[type, ...]:
    """Array types already imported (torch.Tensor, numpy.ndarray); the keys never import them."""
    bases = []
    torch = sys.modules.get("torch")
    if torch is not None:
        bases.append(torch.Tensor)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        bases.append(numpy.ndarray)
    return tuple(bases)


def key_mode(annotation: Any) -> str:
    """``BY_TYPE`` when checking ``annotation`` looks at the value's type only."""
    if annotation is None or annotation is Any:
        return BY_TYPE
    if isinstance(annotation, type) and not is_array_type(annotation) and type(annotation) in (type, abc.ABCMeta):
        return BY_TYPE
    if typing.get_origin(annotation) is None and isinstance(annotation, type) and annotation in array_base_types():
        return BY_TYPE  # a bare `Tensor` annotation
    return BY_STRUCTURE


def value_key(value: Any, arrays: tuple[type, ...]) -> Any:
    """A hashable summary of ``value`` that decides its check, or None when there is none."""
    if isinstance(value, arrays):
        return (type(value), value.dtype, value.shape)  # torch.Size hashes and compares as a tuple
    kind = type(value)
    if kind in ATOMS:
        return (kind, value)
    if kind is tuple or kind is list:
        items = tuple([value_key(item, arrays) for item in value])
        return None if None in items else (kind, items)
    if kind is dict:
        if len(value) > 32:
            return None
        pairs = tuple([(k, value_key(v, arrays)) for k, v in value.items()])
        return None if any(type(k) not in ATOMS or v is None for k, v in pairs) else (kind, pairs)
    return None
