"""A read-only walk of a libcst tree that calls a visitor's hooks without copying the tree.

``CSTNode.visit`` rebuilds every node it passes (``_visit_and_replace_children`` constructs a new
node from the visited children, and each construction validates it), because a transformer may
replace children. A visitor that only reads pays for that copy too: on Hugging Face's modeling files
it was most of the time of the dead-store walk SC303 asks for (``unread.py``). ``visit`` here calls
the same hooks (``on_visit`` / ``visit_<Node>`` and ``on_leave`` / ``leave_<Node>``) on the same nodes
and skips a node's children when its hook returns False, as libcst does.

Children come in the order of the text, as with libcst, for every node that holds code: the order of
the node's fields, except for the few classes whose fields are declared out of text order
(``_TEXT_ORDER``). Punctuation and whitespace may come in another order (parentheses last), which
no reader of a walk looks at.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst

#: The node classes whose fields holding code are not declared in the order of the text: that order.
_TEXT_ORDER: dict[type, tuple[str, ...]] = {
    cst.Arg: ("keyword", "value"),
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.ExceptStarHandler: ("type", "name", "body"),
    cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
}

#: The fields of each node class that may hold nodes, in the order of the text where it matters.
_FIELDS: dict[type, tuple[str, ...]] = {}


def _node_fields(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        declared = tuple(field.name for field in dataclasses.fields(kind))
        first = tuple(name for name in _TEXT_ORDER.get(kind, ()) if name in declared)
        names = _FIELDS[kind] = first + tuple(name for name in declared if name not in first)
    return names


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The node's direct children, in the order of the text (``_TEXT_ORDER``)."""
    for name in _node_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:
                if _is_node(type(item)):
                    yield item
        elif _is_node(kind):
            yield value


#: Whether each class met is a libcst node class (``isinstance`` against libcst's abstract base
#: classes is slow, and a walk asks it for every field of every node).
_NODE_CLASSES: dict[type, bool] = {}


def _is_node(kind: type) -> bool:
    known = _NODE_CLASSES.get(kind)
    if known is None:
        known = _NODE_CLASSES[kind] = issubclass(kind, cst.CSTNode)
    return known


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Call ``visitor``'s hooks on ``node`` and its descendants (pre-order entry, post-order leave)."""
    if visitor.on_visit(node):
        for name in _node_fields(type(node)):  # ``children``, inlined: a walk asks it of every node
            value = getattr(node, name)
            kind = type(value)
            if kind is list or kind is tuple:
                for item in value:
                    if _is_node(type(item)):
                        visit(item, visitor)
            elif _is_node(kind):
                visit(value, visitor)
    visitor.on_leave(node)


def contains(node: cst.CSTNode, kind: type[cst.CSTNode]) -> bool:
    """Whether ``node`` or a descendant of it is a ``kind`` (a final node class: compared exactly)."""
    pending = [node]
    while pending:
        current = pending.pop()
        if type(current) is kind:
            return True
        pending.extend(children(current))
    return False
