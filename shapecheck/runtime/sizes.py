"""Sizes an ``nn.Module`` instance knows, bound before its arguments are checked.

A dim name used in a method's annotations that is also an ``int`` attribute of the instance
(``self.d_model``) or an ``int`` argument its constructor was called with (``vocab_size=65``, recorded
by ``checked(cls)``) is bound first, so ``Float[Tensor, "b t d_model"]`` rejects a (2, 5, 384) input
to a d_model=512 module at the module's own boundary, naming ``d_model=512``.

The binding happens inside jaxtyping's memo for the call: ``self`` gets an annotation whose
``isinstance`` check (beartype runs it first) binds the sizes through a ``meta`` tensor of that shape.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

#: Where ``checked(cls)`` stores an instance's int constructor arguments.
SIZES_ATTRIBUTE = "_shapecheck_sizes"


def known_sizes(instance: Any, names: tuple[str, ...]) -> dict[str, int]:
    """The sizes among ``names`` that ``instance`` knows: int attributes first, then constructor args."""
    namespace = getattr(instance, "__dict__", None)
    if not namespace:
        return {}
    recorded = namespace.get(SIZES_ATTRIBUTE) or {}
    sizes = {}
    for name in names:
        value = namespace.get(name)
        if type(value) is not int:
            value = recorded.get(name)
        if type(value) is int:
            sizes[name] = value
    return sizes


def record_constructor_sizes(cls: type) -> None:
    """Wrap ``cls.__init__`` so that each instance remembers its int constructor arguments."""
    init = cls.__init__
    if getattr(init, "__shapecheck_records_sizes__", False):
        return
    try:
        signature = inspect.signature(init)
    except (TypeError, ValueError):
        return

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        try:
            arguments = signature.bind(self, *args, **kwargs).arguments
        except TypeError:
            return
        sizes = {}
        for name, value in arguments.items():
            if isinstance(value, dict) and signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                sizes.update({k: v for k, v in value.items() if type(v) is int})
            elif type(value) is int:
                sizes[name] = value
        if sizes and hasattr(self, "__dict__"):
            # The outermost constructor runs its recorder last, so its arguments win.
            self.__dict__[SIZES_ATTRIBUTE] = {**self.__dict__.get(SIZES_ATTRIBUTE, {}), **sizes}

    __init__.__shapecheck_records_sizes__ = True  # type: ignore[attr-defined]
    cls.__init__ = __init__  # type: ignore[misc]


def binder_type(names: tuple[str, ...]) -> type | None:
    """An annotation for ``self`` whose isinstance check binds the instance's known sizes.

    None when torch is missing (the sizes are handed to jaxtyping as the shape of a meta tensor).
    """
    try:
        import torch
        from jaxtyping import Shaped
    except ImportError:  # pragma: no cover - torch is what makes modules
        return None

    @functools.lru_cache(maxsize=256)
    def probe(dims: str, shape: tuple[int, ...]) -> tuple[type, Any]:
        return Shaped[torch.Tensor, dims], torch.empty(shape, device="meta")

    class _BindsModuleSizes(type):
        def __instancecheck__(cls, instance: object) -> bool:
            sizes = known_sizes(instance, names)
            if sizes:
                annotation, tensor = probe(" ".join(sizes), tuple(sizes.values()))
                isinstance(tensor, annotation)  # a fresh memo has nothing to disagree with: binds
            return True

    return _BindsModuleSizes("module sizes", (), {"__module__": __name__})
