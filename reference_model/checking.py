"""Runtime shape checks for reference_model: jaxtyping annotations enforced by beartype.

Every public ``forward`` and tensor function in the package is decorated with ``@typechecked``.
Checks are on by default. Turn them off for the whole process with the environment variable

    REFERENCE_MODEL_TYPECHECK=0     (also "false", "off", "no"; read once, at import)

or at run time with ``set_typechecking(False)`` / ``with typechecking(False): ...``.

What ``@typechecked`` adds to ``jaxtyped(typechecker=beartype)``:

1. The on/off switch above (one boolean test per call when off).
2. Module sizes are bound before the arguments are checked. A dim name used in the annotations
   that is also an ``int`` attribute of the module (``self.d_model``, ``self.vocab_size``) is
   bound to that attribute first, so ``Float[Tensor, "b t d_model"]`` rejects a (2, 5, 384) input
   to a d_model=512 encoder, and the error lists ``d_model=512`` among the dims bound so far.
   (This is done by annotating ``self`` with a ``ModuleDims['...']`` type listing the candidate
   names; that is the ``self:`` annotation you see in the "Parameter annotations" line.)

The error raised is jaxtyping's ``TypeCheckError`` (a ``TypeError``); its message names the
function, the argument, the expected annotation and the dims bound so far:

    Type-check error whilst checking the parameters of reference_model.encoder.Encoder.forward.
    The problem arose whilst typechecking parameter 'x'.
    Actual value: f32[2,5,384](torch)
    Expected type: <class 'Float[Tensor, 'b t d_model']'>.
    ...
    The current values for each jaxtyping axis annotation are as follows.
    d_model=512
    b=2
    t=5
"""

import functools
import inspect
import os
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import torch
from beartype import BeartypeConf, beartype
from jaxtyping import AbstractArray, Shaped, TypeCheckError, jaxtyped
from torch import Tensor

__all__ = [
    "ENV_VAR",
    "TypeCheckError",
    "set_typechecking",
    "typecheck_enabled",
    "typechecked",
    "typechecking",
]

ENV_VAR = "REFERENCE_MODEL_TYPECHECK"
_OFF_VALUES = {"0", "false", "off", "no"}

_enabled: bool = os.environ.get(ENV_VAR, "1").strip().lower() not in _OFF_VALUES

F = TypeVar("F", bound=Callable[..., Any])


def typecheck_enabled() -> bool:
    """Whether ``@typechecked`` functions check their arguments and results right now."""
    return _enabled


def set_typechecking(enabled: bool) -> None:
    """Turn runtime shape checks on or off for the whole process."""
    global _enabled
    _enabled = bool(enabled)


@contextmanager
def typechecking(enabled: bool) -> Iterator[None]:
    """Run a block with runtime shape checks on or off, restoring the previous state after."""
    previous = _enabled
    set_typechecking(enabled)
    try:
        yield
    finally:
        set_typechecking(previous)


# ---------------------------------------------------------------------------------------------
# Binding module sizes (self.d_model ...) before the arguments are checked.
# ---------------------------------------------------------------------------------------------


def _dim_names(annotation: Any) -> list[str]:
    """Named dims of every jaxtyping array type inside an annotation (unions and tuples too)."""
    if isinstance(annotation, type) and issubclass(annotation, AbstractArray):
        names = []
        for token in annotation.dim_str.split():
            if token.startswith("*") or token == "...":
                continue  # variadic dims are not module sizes
            name = token.lstrip("#?")
            if name.isidentifier() and not name.startswith("_"):
                names.append(name)
        return names
    return [name for arg in typing.get_args(annotation) for name in _dim_names(arg)]


@functools.lru_cache(maxsize=None)
def _binding_type(dims: str) -> type:
    return Shaped[Tensor, dims]


@functools.lru_cache(maxsize=1024)
def _size_probe(sizes: tuple[int, ...]) -> Tensor:
    # A meta tensor has a shape and no storage: a free way to hand sizes to jaxtyping.
    return torch.empty(sizes, device="meta")


class _ModuleDimsMeta(type):
    """``isinstance(module, ModuleDims[...])`` binds the module's sizes in jaxtyping's memo.

    Used as the annotation of ``self``, which beartype checks first, inside the memo that
    ``jaxtyped`` has just opened for the call; the real arguments are then checked against it.
    """

    names: tuple[str, ...]

    def __instancecheck__(cls, module: object) -> bool:
        bound = [(n, getattr(module, n, None)) for n in cls.names]
        bound = [(n, s) for n, s in bound if isinstance(s, int) and not isinstance(s, bool)]
        if bound:
            dims = " ".join(n for n, _ in bound)
            probe = _size_probe(tuple(s for _, s in bound))
            # A fresh memo has nothing to disagree with, so this binds and returns True.
            isinstance(probe, _binding_type(dims))
        return True


def _module_dims_type(names: tuple[str, ...]) -> type:
    label = " ".join(names)
    return _ModuleDimsMeta(
        f"ModuleDims['{label}']",
        (),
        {"names": names, "__module__": __name__, "__qualname__": f"ModuleDims['{label}']"},
    )


def _bind_module_sizes(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Return ``fn`` with ``self`` annotated so that its int sizes are bound first."""
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    if not params or params[0].name != "self":
        return fn
    annotations = [p.annotation for p in params[1:]] + [signature.return_annotation]
    names = tuple(dict.fromkeys(name for a in annotations for name in _dim_names(a)))
    if not names:
        return fn

    @functools.wraps(fn)
    def with_bound_sizes(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    params[0] = params[0].replace(annotation=_module_dims_type(names))
    with_bound_sizes.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return with_bound_sizes


# PEP 484's numeric tower: an int is accepted where a float is annotated (dropout=0, lr=1).
_beartype = beartype(conf=BeartypeConf(is_pep484_tower=True))


def typechecked(fn: F) -> F:
    """Check ``fn``'s jaxtyping annotations with beartype on every call while checks are on."""
    checked = jaxtyped(typechecker=_beartype)(_bind_module_sizes(fn))

    @functools.wraps(fn)
    def switch(*args: Any, **kwargs: Any) -> Any:
        if _enabled:
            return checked(*args, **kwargs)
        return fn(*args, **kwargs)

    return typing.cast(F, switch)
