"""Ops whose meaning is a string: ``torch.einsum`` equations and einops patterns.

Both are parsed, never evaluated. ``einsum("bhqd,bhkd->bhqk", q, k)`` is recognised as attention
scores (one contracted index, last in both inputs, the output ending in the two free sequence
indices), ``einsum("bhqk,bhkd->bhqd", p, v)`` as the attention output.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from shapecheck.engine.domain.tags import AttentionOutputTag, KeyTransposed
from shapecheck.engine.domain.values import (
    ConstValue,
    ProbsTag,
    ScoresTag,
    TensorValue,
    TupleValue,
    Value,
    as_tensor,
    dim_of,
)
from shapecheck.engine.ops.base import (
    Call,
    attended,
    attention_query,
    combined_scale,
    conflict,
    lineage,
    weight_projection,
)
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.dims import Dim, Truth, equal, product
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter

_EINSUM = re.compile(r"^\s*([A-Za-z.,\s]*?)\s*(?:->\s*([A-Za-z.\s]*))?\s*$")


def _letters(term: str) -> list[str] | None:
    term = term.replace(" ", "")
    if term.count("...") > 1:
        return None
    out: list[str] = []
    i = 0
    while i < len(term):
        if term.startswith("...", i):
            out.append("...")
            i += 3
        elif term[i].isalpha():
            out.append(term[i])
            i += 1
        else:
            return None
    return out


def einsum(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    equation = call.arg(0, "equation")
    operands: list[Value] = list(call.args[1:])
    if len(operands) == 1 and isinstance(operands[0], TupleValue):
        operands = list(operands[0].items)
    tensors = [as_tensor(o) for o in operands]
    tags = lineage(*tensors)
    if not (isinstance(equation, ConstValue) and isinstance(equation.value, str)):
        return TensorValue(None, None, tags, call.node)
    match = _EINSUM.match(equation.value)
    if match is None:
        return TensorValue(None, None, tags, call.node)
    inputs = [_letters(term) for term in match.group(1).split(",")]
    if any(i is None for i in inputs) or len(inputs) != len(tensors):
        return TensorValue(None, None, tags, call.node)
    if match.group(2) is not None:
        output = _letters(match.group(2))
    else:
        counts: dict[str, int] = {}
        for term in inputs:
            for letter in term:  # type: ignore[union-attr]
                counts[letter] = counts.get(letter, 0) + 1
        output = (["..."] if "..." in counts else []) + sorted(l for l, c in counts.items() if c == 1 and l != "...")
    if output is None:
        return TensorValue(None, None, tags, call.node)
    sizes: dict[str, Dim] = {}
    for term, tensor in zip(inputs, tensors):
        shape = tensor.shape
        if shape is None or "..." in term:  # type: ignore[operator]
            continue
        if shape.variadic:
            # Only the rank of the term fits: the known trailing dims are the term's last letters.
            count = min(len(shape.dims), len(term))  # type: ignore[arg-type]
            pairs = list(zip(term[len(term) - count :], shape.dims[len(shape.dims) - count :]))  # type: ignore[index]
        elif shape.rank != len(term):  # type: ignore[arg-type]
            continue
        else:
            pairs = list(zip(term, shape.dims))  # type: ignore[arg-type]
        for letter, dim in pairs:
            if letter in sizes:
                known = sizes[letter]
                if equal(known, dim, frame.assumptions) is Truth.FALSE and not (known.is_const and known.value == 1) and not (dim.is_const and dim.value == 1):
                    conflict(
                        interp,
                        "matmul",
                        call.node,
                        f"einsum {equation.value!r}: index '{letter}' is {known} in one operand and {dim} in another",
                        frame,
                        "einsum",
                    )
            else:
                sizes[letter] = dim
    shape = None
    if "..." not in output:
        # The equation fixes the rank of the result; an index no operand showed gets a size of its own.
        unseen = {letter: fresh_anonymous() for letter in output if letter not in sizes}
        shape = Shape(tuple(sizes[letter] if letter in sizes else unseen[letter] for letter in output))
    dtype = tensors[0].dtype if tensors else None
    result = TensorValue(shape, dtype, tags, call.node)
    if len(inputs) == 2:

        projection = weight_projection(tensors[0], tensors[1], call.node)
        if projection is not None:
            result = result.with_tag(projection)
        result = _attention_role(result, inputs[0], inputs[1], output, tensors, sizes, call)  # type: ignore[arg-type]
    return result


def _attention_role(
    result: TensorValue,
    left: list[str],
    right: list[str],
    output: list[str],
    tensors: list[TensorValue],
    sizes: dict[str, Dim],
    call: Call,
) -> TensorValue:
    # An ellipsis summed away (``...id,...jd->ij``) is contracted too: a product over the batch is
    # no per-example attention.
    contracted = [l for l in left if l in right and l not in output]
    if len(contracted) != 1 or len(output) < 2:
        return result
    (c,) = contracted
    a, b = tensors
    for probs, term in ((a, left), (b, right)):
        if probs.has(ProbsTag):
            tagged = result.with_tag(AttentionOutputTag(call.node, probs.tag(ProbsTag).node, term.index(c) - len(term)))
            return attended(tagged, attention_query(probs), probs.tag(ProbsTag).node)
    query_free, key_free = output[-2], output[-1]
    # Which free index runs over keys is not written in an einsum; the values product tells (see
    # AttentionOutputTag), so key_axis stays None here.
    scores_like = left[-1] == c and right[-1] == c and (
        (query_free in left and query_free not in right and key_free in right and key_free not in left)
        or (query_free in right and query_free not in left and key_free in left and key_free not in right)
    )
    transposed = b.tag(KeyTransposed)
    if not scores_like and transposed is not None and left[-1] == c and len(right) >= 2 and right[-2] == c:
        # ``einsum("bntc,bncs->bnts", q, k.transpose(2, 3))``: the written-out q @ k^T.
        if output[-1] == right[-1] and output[-2] == left[-2]:
            tagged = result.with_tag(ScoresTag(call.node, a, transposed.source, sizes.get(c), -1))
            factor = combined_scale(a, b)
            return tagged.with_tag(factor) if factor is not None else tagged
    if scores_like:
        tagged = result.with_tag(ScoresTag(call.node, a, b, sizes.get(c), None))
        factor = combined_scale(a, b)
        return tagged.with_tag(factor) if factor is not None else tagged
    return result


def einops_einsum(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``einops.einsum(q, k, "b h i d, b h j d -> b h i j")``: the pattern comes last and names
    axes with words. It is rewritten to torch's form (one letter per name) and read as ``einsum``."""
    *operands, pattern = call.args if call.args else (None,)
    equation = _letters_equation(pattern.value) if isinstance(pattern, ConstValue) and isinstance(pattern.value, str) else None
    if equation is None:
        return TensorValue(None, None, lineage(*(as_tensor(o) for o in operands)), call.node)
    rewritten = Call(call.node, (ConstValue(equation), *operands), {}, (None, *call.arg_nodes[: len(operands)]))
    return einsum(interp, rewritten, frame)


def _letters_equation(pattern: str) -> str | None:
    """``"b h i d, b h j d -> b h i j"`` -> ``"abcd,abed->abce"``; None for anything else."""
    if pattern.count("->") != 1:
        return None
    letters: dict[str, str] = {}
    alphabet = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    sides = []
    for side in pattern.split("->"):
        terms = []
        for term in side.split(","):
            tokens = re.findall(r"\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\S", term)
            out = ""
            for token in tokens:
                if token == "...":
                    out += "..."
                elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token):
                    if token not in letters:
                        letter = next(alphabet, None)
                        if letter is None:
                            return None
                        letters[token] = letter
                    out += letters[token]
                else:
                    return None  # a group, a number: not a plain einsum
            terms.append(out)
        sides.append(",".join(terms))
    return "->".join(sides)


# ---------------------------------------------------------------------------------------- einops


def _groups(side: str) -> list[list[str]] | None:
    """``b t (h d)`` -> [["b"], ["t"], ["h", "d"]]; ``...`` is its own group."""
    tokens = re.findall(r"\(|\)|\.\.\.|[A-Za-z_][A-Za-z0-9_]*|\d+", side)
    groups: list[list[str]] = []
    current: list[str] | None = None
    for token in tokens:
        if token == "(":
            if current is not None:
                return None
            current = []
        elif token == ")":
            if current is None:
                return None
            groups.append(current)
            current = None
        elif current is not None:
            current.append(token)
        else:
            groups.append([token])
    return groups if current is None else None


def _expand_ellipsis(
    left: list[list[str]], right: list[list[str]], shape: Shape | None, merged: bool
) -> tuple[list[list[str]], list[list[str]], Shape, bool] | None:
    """A pattern with one ``...`` on each side (``... j -> ... 1 j``, ``b ... -> b h ...``,
    ``... (w n) -> (...) w n``) written out for the axes the ellipsis covers, each an axis of its own
    (``...0``, ``...1``), so that the pattern reads as one without an ellipsis.

    On a tensor of known rank the ellipsis covers the axes the other groups leave. On one of unknown
    rank (``(*, t, d)`` or no shape), only a leading ellipsis that stays leading and whole on the
    right (``... d -> ... 1 d``) is followed: it covers the unknown prefix (kept open: the last item
    returned is True) and the known dims the trailing groups do not take; trailing groups of axes
    the shape does not show are unnamed. ``merged``: the right side's ellipsis is inside
    parentheses (``(...) b``: its axes merged into one). None: the pattern has no such ellipsis."""
    where = [i for i, g in enumerate(left) if "..." in g]
    there = [i for i, g in enumerate(right) if "..." in g]
    if len(where) != 1 or len(there) != 1 or left[where[0]] != ["..."] or right[there[0]].count("...") != 1:
        return None
    before, after = where[0], len(left) - where[0] - 1
    if shape is not None and not shape.variadic:
        if shape.rank < before + after:
            return None  # einops raises: more groups than axes
        covered = list(shape.dims[before : shape.rank - after])
        dims, open_prefix = list(shape.dims), False
    else:
        if before or there[0] != 0 or right[0] != ["..."] or merged:
            return None  # the unknown prefix would not stay leading
        known = list(shape.dims) if shape is not None else []
        tail = known[-after:] if after and len(known) >= after else known
        tail = [fresh_anonymous() for _ in range(after - len(tail))] + tail
        covered = known[: len(known) - len(tail)] if len(known) > len(tail) else []
        dims, open_prefix = covered + tail, True
    names = [f"...{i}" for i in range(len(covered))]
    new_left = left[:before] + [[n] for n in names] + left[before + 1 :]
    group = right[there[0]]
    if not merged:
        inserted = [[n] for n in names]
    else:
        at = group.index("...")
        inserted = [group[:at] + names + group[at + 1 :]]
        if not inserted[0]:
            inserted = [["1"]]  # ``(...)`` over no axis: an axis of size 1
    new_right = right[: there[0]] + inserted + right[there[0] + 1 :]
    return new_left, new_right, Shape(tuple(dims)), open_prefix


def einops_call(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    tensor = call.tensor(0, "tensor")
    pattern = call.arg(1, "pattern")
    operation = ""
    node = call.node
    from libcst import Attribute, Name
    from libcst import Call as CstCall

    if isinstance(node, CstCall):
        func = node.func
        operation = func.attr.value if isinstance(func, Attribute) else (func.value if isinstance(func, Name) else "")
    if not (isinstance(pattern, ConstValue) and isinstance(pattern.value, str)) or "->" not in pattern.value:
        return replace(tensor, shape=None, node=call.node)
    left_text, right_text = pattern.value.split("->", 1)
    left, right = _groups(left_text), _groups(right_text)
    if left is None or right is None:
        return replace(tensor, shape=None, node=call.node)
    axes: dict[str, Dim] = {}
    for key, value in call.kwargs.items():
        dim = dim_of(value)
        if dim is not None:
            axes[key] = dim
    shape = tensor.shape
    open_prefix = False
    expanded = _expand_ellipsis(left, right, shape, bool(re.search(r"\([^)]*\.\.\.[^)]*\)", right_text)))
    if expanded is not None:
        left, right, shape, open_prefix = expanded
    if shape is not None and shape.variadic and len(shape.dims) <= len(left) and not any("..." in g for g in left):
        # ``b n (h d)`` on a tensor known only as (*, 192): the leading axes are named by the pattern
        # (a ``1`` is an axis of size 1), and a pattern without an ellipsis fixes the rank: einops
        # raises for any other, so ``n d`` on (*, 4, 8) is exactly (4, 8).
        leading = left[: len(left) - len(shape.dims)]
        if all(len(g) == 1 for g in leading):
            shape = Shape(tuple(Dim.const(int(g[0])) if g[0].isdigit() else Dim.sym(g[0]) for g in leading) + shape.dims)
    if shape is None and not any("..." in g for g in left):
        # An input of unknown shape: the pattern gives its rank; axes it does not size are
        # unnamed dims (never equal to anything), so the output keeps its rank and known axes.
        dims = []
        for group in left:
            for name in group:
                if not name.isdigit() and name not in axes:
                    axes[name] = fresh_anonymous()
            dims.append(product(axes[n] if not n.isdigit() else Dim.const(int(n)) for n in group))
        shape = Shape(tuple(dims))
    # An ellipsis of its own covers exactly one axis when the rank equals the number of groups: it
    # is then read as that axis (``b ... d -> b d ...`` of (b, t, d) is (b, d, t)).
    known = (
        shape is not None and not shape.variadic and shape.rank == len(left)
        and all(g == ["..."] or "..." not in g for g in left)
    )
    if known:
        for group, dim in zip(left, shape.dims):  # type: ignore[union-attr]
            if len(group) == 1:
                name = group[0]
                if name.isdigit():
                    continue
                axes.setdefault(name, dim)
            else:
                missing = [n for n in group if n not in axes and not n.isdigit()]
                if not missing:
                    total = product(axes[n] if not n.isdigit() else Dim.const(int(n)) for n in group)
                    if equal(total, dim, frame.assumptions) is Truth.FALSE:
                        conflict(
                            interp,
                            "reshape",
                            call.node,
                            f"{pattern.value!r}: the group ({' '.join(group)}) = {total} does not match the axis of size {dim}",
                            frame,
                            "rearrange",
                        )
                if len(missing) == 1:
                    others = product(axes[n] if not n.isdigit() else Dim.const(int(n)) for n in group if n != missing[0])
                    try:
                        axes[missing[0]] = frame.assumptions.simplify(dim // others)
                        remainder = frame.assumptions.simplify(dim % others)
                    except ArithmeticError:
                        continue
                    if remainder.is_const and remainder.value != 0:
                        conflict(
                            interp,
                            "heads",
                            call.node,
                            f"{pattern.value!r} splits {dim} into groups of {others}: {dim} is not divisible by "
                            f"{others} ({dim} % {others} = {remainder.value})",
                            frame,
                            "rearrange",
                        )
    out_dims: list[Dim] = []
    ok = known
    for group in right:
        parts = []
        for name in group:
            if name.isdigit():
                parts.append(Dim.const(int(name)))
            elif name in axes:
                parts.append(axes[name])
            else:
                ok = False
                break
        if not ok:
            break
        out_dims.append(product(parts) if parts else Dim.const(1))
    new_shape = Shape(tuple(out_dims), variadic=open_prefix) if ok else None
    result = replace(tensor, shape=new_shape, node=call.node)
    flat_left = [g[0] for g in left if len(g) == 1]
    flat_right = [g[0] for g in right if len(g) == 1]
    swaps = (
        operation == "rearrange"
        and len(left) == len(right)
        and len(left) >= 2
        and all(len(g) == 1 for g in left + right)
        and flat_left[:-2] == flat_right[:-2]
        and flat_left[-2:] == list(reversed(flat_right[-2:]))
    )
    if swaps:
        return result.without(KeyTransposed).with_tag(KeyTransposed(tensor))
    if operation == "reduce":
        return replace(result, tags=lineage(tensor))
    return result.without(KeyTransposed)
