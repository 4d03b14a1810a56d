"""``trace(model, *inputs)``: one forward pass, drawn as the tree of its submodule calls with shapes.

Forward hooks on every submodule record each call's inputs and outputs. Dims are named from the
jaxtyping annotations of the module's ``forward`` where there are some (``(b=2, t=16, d_model=64)``),
and are plain sizes elsewhere (``(2, 16, 64)``). With ``device="meta"`` the pass runs on a copy of
the model whose tensors have shapes and no storage: any size traces in milliseconds, in no memory.
"""

from __future__ import annotations

import copy
import inspect
import itertools
from dataclasses import dataclass, field
from typing import Any

from shapecheck.runtime.dims import NAMED, VARIADIC, array_types, parse_dims
from shapecheck.runtime.errors import describe, dtype_name
from shapecheck.runtime.sizes import known_sizes


@dataclass
class TraceNode:
    """One call of one module: what went in, what came out, and the calls it made."""

    name: str  # attribute path inside the model ("blocks.0.attn"); the class name for the root
    kind: str  # the module's class name
    inputs: list[tuple[str, str]] = field(default_factory=list)  # (parameter, shape text)
    outputs: list[str] = field(default_factory=list)
    children: list[TraceNode] = field(default_factory=list)

    @property
    def short_name(self) -> str:
        """The last part of the attribute path (``W_Q`` for ``blocks.0.attn.W_Q``, ``blocks.0``)."""
        parts = self.name.split(".")
        return ".".join(parts[-2:]) if parts[-1].isdigit() else parts[-1]

    def title(self) -> str:
        return self.kind if self.name == self.kind else f"{self.short_name}: {self.kind}"

    def label(self) -> str:
        title = self.title()
        inputs = ", ".join(f"{p}={s}" for p, s in self.inputs)
        return f"{title}({inputs}) -> {', '.join(self.outputs) or 'None'}"

    def walk(self) -> list[TraceNode]:
        """This node and all below it, in call order."""
        return [self] + [node for child in self.children for node in child.walk()]


@dataclass
class Trace:
    """The tree of a forward pass; ``print(trace)`` for text, ``rich.print(trace)`` for a tree."""

    root: TraceNode

    def __str__(self) -> str:
        lines: list[str] = []

        def add(node: TraceNode, depth: int) -> None:
            lines.append("    " * depth + node.label())
            for child in node.children:
                add(child, depth + 1)

        add(self.root, 0)
        return "\n".join(lines)

    def __rich__(self) -> Any:
        from rich.markup import escape
        from rich.tree import Tree

        def add(tree: Any, node: TraceNode) -> None:
            branch = tree.add(_rich_label(node, escape))
            for child in node.children:
                add(branch, child)

        tree = Tree(_rich_label(self.root, escape))
        for child in self.root.children:
            add(tree, child)
        return tree

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: one box per call, nested boxes per module, shapes on the arrows."""
        ids = {id(node): f"n{i}" for i, node in enumerate(self.root.walk())}
        lines = ["flowchart TD"]

        def box(node: TraceNode) -> str:
            inputs = "<br/>".join(f"{p}: {s}" for p, s in node.inputs)
            return f'{ids[id(node)]}["{_mermaid_text(node.title())}<br/>{_mermaid_text(inputs)}"]'

        def add(node: TraceNode, depth: int) -> None:
            indent = "    " * depth
            if node.children:
                lines.append(f'{indent}subgraph {ids[id(node)]}_group["{_mermaid_text(node.name)}"]')
                lines.append(f"{indent}    {box(node)}")
                for child in node.children:
                    add(child, depth + 1)
                previous = node
                for child in node.children:
                    shape = child.inputs[0][1] if child.inputs else ""
                    lines.append(f'{indent}    {ids[id(previous)]} -- "{_mermaid_text(shape)}" --> {ids[id(child)]}')
                    previous = child
                lines.append(f"{indent}end")
            else:
                lines.append(f"{indent}{box(node)}")

        add(self.root, 1)
        out = f'    {ids[id(self.root)]}_out(["{_mermaid_text(", ".join(self.root.outputs))}"])'
        last = self.root.walk()[-1] if self.root.children else self.root
        lines += [out, f"    {ids[id(last)]} --> {ids[id(self.root)]}_out"]
        return "\n".join(lines)


def _rich_label(node: TraceNode, escape: Any) -> str:
    title = node.kind if node.name == node.kind else f"{escape(node.short_name)}: [bold]{escape(node.kind)}[/]"
    inputs = ", ".join(f"{escape(p)}=[cyan]{escape(s)}[/]" for p, s in node.inputs)
    outputs = ", ".join(f"[green]{escape(s)}[/]" for s in node.outputs) or "None"
    return f"{title}({inputs}) -> {outputs}"


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def trace(model: Any, *inputs: Any, device: str | None = None, **keyword_inputs: Any) -> Trace:
    """Run ``model(*inputs, **keyword_inputs)`` once, without gradients, and return its call tree."""
    import torch

    if device is not None:
        model = _copy_to(model, device)
        inputs = tuple(_to(value, device) for value in inputs)
        keyword_inputs = {k: _to(v, device) for k, v in keyword_inputs.items()}
    names = {module: name for name, module in model.named_modules()}
    stack: list[TraceNode] = []
    roots: list[TraceNode] = []

    def before(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        kind = type(module).__name__
        node = TraceNode(names.get(module) or kind, kind, _describe_inputs(module, args, kwargs))
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)

    def after(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        node = stack.pop()
        node.outputs = _describe_output(module, args, kwargs, output)

    handles = []
    for module in names:
        handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
        handles.append(module.register_forward_hook(after, with_kwargs=True))
    try:
        with torch.no_grad():
            model(*inputs, **keyword_inputs)
    finally:
        for handle in handles:
            handle.remove()
    return Trace(roots[0])


def _copy_to(model: Any, device: str) -> Any:
    """A copy of ``model`` on ``device`` whose tensors are made there directly (never copied)."""
    import torch

    memo: dict[int, Any] = {}
    for tensor in itertools.chain(model.parameters(), model.buffers()):
        moved = torch.empty_like(tensor, device=device)
        if isinstance(tensor, torch.nn.Parameter):
            moved = torch.nn.Parameter(moved, requires_grad=tensor.requires_grad)
        memo[id(tensor)] = moved
    return copy.deepcopy(model, memo)


def _to(value: Any, device: str) -> Any:
    return value.to(device) if hasattr(value, "to") and hasattr(value, "shape") else value


def _forward_annotations(module: Any) -> tuple[inspect.Signature | None, dict[str, Any]]:
    forward = inspect.unwrap(type(module).forward)
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return None, {}
    annotations = {p.name: p.annotation for p in signature.parameters.values() if p.annotation is not p.empty}
    if signature.return_annotation is not signature.empty:
        annotations["return"] = signature.return_annotation
    namespace = getattr(forward, "__globals__", {})
    for name, annotation in list(annotations.items()):
        if isinstance(annotation, str):
            try:
                annotations[name] = eval(annotation, namespace)  # noqa: S307 - as typing.get_type_hints
            except Exception:  # noqa: BLE001 - an unresolvable annotation names no dims
                del annotations[name]
    return signature, annotations


def _describe_inputs(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, str]]:
    signature, annotations = _forward_annotations(module)
    try:
        arguments = signature.bind(module, *args, **kwargs).arguments if signature else None
    except TypeError:
        arguments = None
    if arguments is None:
        return [(f"arg{i}", describe(v)) for i, v in enumerate(args)] + [(k, describe(v)) for k, v in kwargs.items()]
    arguments.pop(next(iter(signature.parameters)), None)  # self
    module._shapecheck_trace_bound = bound = dict(known_sizes(module, _all_names(annotations)))
    return [(name, _shape_text(annotations.get(name), value, bound)) for name, value in arguments.items()]


def _describe_output(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> list[str]:
    _, annotations = _forward_annotations(module)
    bound = module.__dict__.pop("_shapecheck_trace_bound", {})
    annotation = annotations.get("return")
    if isinstance(output, tuple):
        members = _tuple_members(annotation, len(output))
        return [_shape_text(member, value, bound) for member, value in zip(members, output)]
    return [_shape_text(annotation, output, bound)]


def _tuple_members(annotation: Any, count: int) -> list[Any]:
    import typing

    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and len(args) == count:
        return list(args)
    return [None] * count


def _all_names(annotations: dict[str, Any]) -> tuple[str, ...]:
    return tuple(d.name for a in annotations.values() for t in array_types(a) for d in parse_dims(t.dim_str) if d.kind == NAMED)


def _shape_text(annotation: Any, value: Any, bound: dict[str, Any]) -> str:
    """``float32(b=2, t=16, d_model=64)``: sizes named by the first annotation of the right rank."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return describe(value)
    sizes = [int(s) for s in shape]
    labels = [str(s) for s in sizes]
    for candidate in array_types(annotation):
        names = _axis_names(parse_dims(candidate.dim_str), len(sizes))
        if names is not None:
            labels = [f"{n}={s}" if n else str(s) for n, s in zip(names, sizes)]
            for n, s in zip(names, sizes):
                if n:
                    bound.setdefault(n, s)
            break
    return f"{dtype_name(dtype)}({', '.join(labels)})"


def _axis_names(dims: tuple[Any, ...], rank: int) -> list[str] | None:
    """The dim name of each axis ("" when unnamed), or None when the rank does not fit."""
    variadic = [i for i, d in enumerate(dims) if d.kind == VARIADIC]
    fixed = len(dims) - len(variadic)
    if (not variadic and rank != fixed) or rank < fixed or len(variadic) > 1:
        return None
    names: list[str] = []
    for dim in dims:
        if dim.kind == VARIADIC:
            names += [""] * (rank - fixed)
        else:
            names.append(dim.name if dim.kind == NAMED else "")
    return names
