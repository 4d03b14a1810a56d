"""Reading a call's arguments by position or by keyword, shared by op rules (``ops.Call``) and the
events rules read (``facts.OpEvent``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shapecheck.engine.domain.values import UNKNOWN, TensorValue, Value, as_tensor

if TYPE_CHECKING:  # pragma: no cover - typing only
    import libcst as cst


class Arguments:
    """Mixin over ``args``, ``kwargs``, ``arg_nodes`` and ``kwarg_nodes`` attributes."""

    args: tuple[Value, ...]
    kwargs: dict[str, Value]
    arg_nodes: tuple["cst.CSTNode | None", ...]
    kwarg_nodes: dict[str, "cst.CSTNode"]

    def arg(self, index: int, name: str | None = None) -> Value:
        """An argument given by position or by keyword (UNKNOWN when absent). torch takes numpy's
        ``axis=`` / ``keepdims=`` for ``dim=`` / ``keepdim=``."""
        name = _alias(name, self.kwargs)
        if name is not None and name in self.kwargs:
            return self.kwargs[name]
        if 0 <= index < len(self.args):
            return self.args[index]
        return UNKNOWN

    def has_arg(self, index: int, name: str | None = None) -> bool:
        name = _alias(name, self.kwargs)
        return (name is not None and name in self.kwargs) or 0 <= index < len(self.args)

    def has(self, index: int, name: str | None = None) -> bool:
        return self.has_arg(index, name)

    def arg_node(self, index: int, name: str | None = None) -> "cst.CSTNode | None":
        name = _alias(name, self.kwarg_nodes)
        if name is not None and name in self.kwarg_nodes:
            return self.kwarg_nodes[name]
        if 0 <= index < len(self.arg_nodes):
            return self.arg_nodes[index]
        return None

    def tensor(self, index: int, name: str | None = None) -> TensorValue:
        return as_tensor(self.arg(index, name))


_NUMPY_NAMES = {"dim": "axis", "keepdim": "keepdims"}


def _alias(name: str | None, given: "dict") -> str | None:
    """``dim`` when given as ``dim``, else numpy's ``axis`` when that was given instead."""
    if name is None or name in given:
        return name
    alias = _NUMPY_NAMES.get(name)
    return alias if alias is not None and alias in given else name
