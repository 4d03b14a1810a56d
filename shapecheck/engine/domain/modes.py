"""Train / eval mode of model objects along a path, for the training-loop facts (SC601).

A path's mode state maps a model's identity (``ModuleIdent``) to the set of modes it may be in
there: atoms ``("train", node)``, ``("eval", node)`` (the call or construction that set it) and
``("unknown", node)`` (``model.train(flag)``). A model built on the path starts in training mode,
as torch builds it. Branches join by union (a may-analysis).

A loop body runs once. Its state starts from the symbolic atom ``("head", LoopHead)``, the state at
the loop's head, which the loop resolves when the body is done: head = entry | end of the body.
That is how "evaluates at the end of an iteration, trains at the start of the next one" is seen
without running the body twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    import libcst as cst

ModeAtom = tuple  # ("train" | "eval" | "unknown", node) or ("head", LoopHead)
ModeState = frozenset
Modes = dict  # ModuleIdent -> ModeState

TRAIN, EVAL, UNKNOWN_MODE, HEAD = "train", "eval", "unknown", "head"


@dataclass(frozen=True, eq=False)
class LoopHead:
    """The head of one loop, in one analysis of it."""

    node: "cst.CSTNode"


def state(mode: str, node: "cst.CSTNode | None") -> ModeState:
    return frozenset({(mode, node)})


def unknown_state() -> ModeState:
    return state(UNKNOWN_MODE, None)


def join(all_modes: Iterable[Modes]) -> Modes:
    """The union of several paths' states; a model missing on one path may be anything there."""
    paths = list(all_modes)
    if not paths:
        return {}
    first = paths[0]
    merged = dict(first)
    # Paths forked from one state share most of their entries (the same frozensets): those are
    # kept as they are, so a join costs what the paths changed, not how many models exist.
    for other in paths[1:]:
        if other is first or other == first:
            continue
        for key, value in other.items():
            mine = merged.get(key)
            if mine is not value:
                merged[key] = (mine if mine is not None else unknown_state()) | value
        for key in merged.keys() - other.keys():
            merged[key] = merged[key] | unknown_state()
    return merged


def enter_loop(entry: Modes, head: LoopHead) -> Modes:
    return {key: frozenset({(HEAD, head)}) for key in entry}


def loop_head(entry: Modes, end: Modes, head: LoopHead) -> Modes:
    """The state at the head of a loop: its entry state, or the state at the end of an iteration."""
    fixed: Modes = {}
    for key in set(entry) | set(end):
        came_back = end.get(key, unknown_state()) - {(HEAD, head)}
        fixed[key] = entry.get(key, frozenset()) | came_back if key in entry else end.get(key, unknown_state())
    return fixed


def resolve(value: ModeState | None, head: LoopHead, at_head: ModeState | None) -> ModeState | None:
    """``value`` with the loop's head atom replaced by the state at the head."""
    if value is None or (HEAD, head) not in value:
        return value
    return (value - {(HEAD, head)}) | (at_head if at_head is not None else unknown_state())


def resolve_all(modes: Modes, head: LoopHead, fixed: Modes) -> Modes:
    return {key: resolve(value, head, fixed.get(key)) for key, value in modes.items()}


def kinds(value: ModeState | None) -> set[str]:
    """The modes a state allows ("head" atoms of loops still open count as unknown)."""
    if value is None:
        return {UNKNOWN_MODE}
    return {UNKNOWN_MODE if atom[0] == HEAD else atom[0] for atom in value}


def setters(value: ModeState | None, mode: str) -> list:
    """The nodes that set ``mode`` on some path reaching here (construction or a train/eval call)."""
    if value is None:
        return []
    return [atom[1] for atom in value if atom[0] == mode and atom[1] is not None]
