"""One mutation operator per rule code: where the bug can be planted, and the planted source.

Each operator takes a parsed module and yields ``Mutation``s: the node the bug is planted at (its
line is the site) and the replacements (original node -> new node, by identity). An operator only
yields where its precondition holds, so that the mutant really is a bug:

- the scale / softmax / mask operators only act on a softmax whose input comes from a matmul in the
  same function (attention scores), following assignments;
- the PE operators only on an addition with a value named as a position table;
- the layer operators only where the changed size really disagrees (a residual add, a chain).

The harness (``mutation.py``) applies every mutation, keeps those that still parse, and lints them.
Statements are never removed: a dropped statement becomes ``pass`` on the same line, and a moved one
is joined with ``;``, so every line keeps its number and findings on the original can be compared.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst

from mutation_sites import (
    MASK_FILL_METHODS,
    FunctionFlow,
    arg,
    call_name,
    class_methods,
    classes,
    code,
    contains_matmul,
    dotted,
    flows,
    function_flow,
    functions,
    of_type,
    source_of,
    imports_torch,
    inside,
    int_value,
    is_matmul,
    is_method_call,
    is_number,
    looks_positional,
    names_in,
    self_attribute_assignments,
    softmax_input,
    target_names,
    walk,
)


@dataclass
class Mutation:
    """One planted bug: ``anchor`` gives its line; ``replacements`` map original nodes to new ones."""

    code: str
    anchor: cst.CSTNode
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | str]]  # a str is spliced in as is
    description: str


Operator = Callable[[cst.Module], Iterator[Mutation]]
OPERATORS: dict[str, Operator] = {}
DESCRIPTIONS: dict[str, str] = {}


def operator(code_: str, description: str):
    def register(function: Operator) -> Operator:
        OPERATORS[code_] = function
        DESCRIPTIONS[code_] = description
        return function

    return register


PASS_LINE = cst.SimpleStatementLine(body=[cst.Pass()])
SCALE_NAME = re.compile(r"scal|sqrt|temperature|norm_fact|inv_freq_scale", re.I)
HEADS_NAME = re.compile(r"^(n_?heads?|num_heads|heads|nhead|n_head|num_attention_heads|num_head)$")
WIDTH_NAME = re.compile(r"^(dim|d_model|hidden_size|embed_dim|n_embd|width|hidden_dim|model_dim|n_state|embed_dims)$")
SEQ_NAME = re.compile(r"(max_len|max_seq_len|max_seq_length|seq_len|block_size|n_ctx|num_patches|max_position_embeddings|max_length|num_positions)$")


def _flows(module: cst.Module) -> list[FunctionFlow]:
    return flows(module)


def _looks_like_scale(node: cst.BaseExpression) -> bool:
    """A scale factor: ``self.scale``, ``math.sqrt(d)``, ``d ** -0.5``, ``head_dim ** 0.5``."""
    text = code(node)
    if SCALE_NAME.search(text):
        return True
    return "**" in text and ("0.5" in text or ".5" in text)


def _assignment_flows(flow: FunctionFlow, upstream: set[str], node: cst.CSTNode) -> bool:
    return any(a.targets & upstream and inside(node, a.value) for a in flow.assignments)


def _inside(node: cst.CSTNode, container: cst.CSTNode) -> bool:
    return inside(node, container)


def _score_context(flow: FunctionFlow):
    """For each scores softmax: (softmax call, upstream names, input expression)."""
    for call, upstream in flow.score_softmaxes():
        parsed = softmax_input(call)
        assert parsed is not None
        yield call, upstream, parsed[0], parsed[1]


def _feeds_softmax(flow: FunctionFlow, node: cst.CSTNode) -> bool:
    """``node`` is inside a scores softmax's input, or inside a value assigned to a name upstream of it."""
    for call, upstream, value, _ in _score_context(flow):
        if _inside(node, value) or _assignment_flows(flow, upstream, node):
            return True
    return False


# ----------------------------------------------------------------------------------------- SC1xx


@operator("SC101", "delete the attention scale (scores not divided by sqrt(d_k))")
def delete_scale(module: cst.Module) -> Iterator[Mutation]:
    for node, kept, split in _scale_removals(module):
        if kept is None:
            yield Mutation("SC101", node, [(node, cst.Pass())], "in-place scale removed")
        elif not split:
            yield Mutation("SC101", node, [(node, kept)], "scale removed")


def _scale_removals(module: cst.Module) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression | None, bool]]:
    """Each scale feeding attention scores, with what is left without it (None: the statement goes)
    and whether it is one half of a scale split over both operands (``(q * s) @ (k * s)``, Whisper's
    ``s = d_k ** -0.25``): removing that one leaves scores scaled by the wrong factor, an SC102 bug."""
    for flow in _flows(module):
        if not flow.score_softmaxes():
            continue
        for node in walk(flow.function.body):
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Divide, cst.Multiply)):
                left, right = node.left, node.right
                if contains_matmul(left) and _looks_like_scale(right) and not contains_matmul(right):
                    kept = left
                elif isinstance(node.operator, cst.Multiply) and contains_matmul(right) and _looks_like_scale(left):
                    kept = right
                elif not contains_matmul(node) and _looks_like_scale(right) and not _looks_like_scale(left):
                    # q = q * self.scale: the scaled operand must reach a matmul feeding the softmax
                    kept = left
                    if not _scaled_query_feeds_scores(flow, node):
                        continue
                else:
                    continue
                if _feeds_softmax(flow, node):
                    yield node, kept, _half_of_a_split_scale(flow.function.body, node, right)
            elif isinstance(node, cst.AugAssign) and isinstance(node.operator, (cst.DivideAssign, cst.MultiplyAssign)):
                if _looks_like_scale(node.value) and any(
                    _target_upstream(flow, t) for t in (dotted(node.target),) if t
                ):
                    yield node, None, False


def _half_of_a_split_scale(body: cst.CSTNode, node: cst.BinaryOperation, scale: cst.BaseExpression) -> bool:
    """``node`` (``q * scale``) is one operand of a matmul whose other operand is multiplied by the
    same scale too."""
    if contains_matmul(node):
        return False
    text = code(scale)
    for product in walk(body):
        if not (isinstance(product, cst.BinaryOperation) and isinstance(product.operator, cst.MatrixMultiply)):
            continue
        for mine, other in ((product.left, product.right), (product.right, product.left)):
            if _inside(node, mine) and any(
                isinstance(part, cst.BinaryOperation) and isinstance(part.operator, cst.Multiply)
                and text in (code(part.left), code(part.right))
                for part in walk(other)
            ):
                return True
    return False


def _target_upstream(flow: FunctionFlow, name: str) -> bool:
    for _, upstream, _, _ in _score_context(flow):
        if name in upstream:
            return True
    return False


def _scaled_query_feeds_scores(flow: FunctionFlow, node: cst.CSTNode) -> bool:
    for a in flow.assignments:
        if inside(node, a.value):
            for target in a.targets:
                if _target_upstream(flow, target):
                    return True
    return False


def _statement_of(flow: FunctionFlow, small: cst.CSTNode) -> cst.SimpleStatementLine | None:
    for node in walk(flow.function.body):
        if isinstance(node, cst.SimpleStatementLine) and any(s is small for s in node.body):
            return node
    return None


def _sqrt_to_plain(node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``math.sqrt(d)`` -> ``d``; ``d ** -0.5`` -> ``d ** -1``; ``d ** 0.5`` -> ``d``."""
    if isinstance(node, cst.Call) and call_name(node) == "sqrt" and len(node.args) == 1:
        inner = node.args[0].value
        return cst.parse_expression(f"({code(inner)})")
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        exponent = code(node.right).replace(" ", "").strip("()")
        if exponent in {"-0.5", "-.5"}:
            return node.with_changes(right=cst.parse_expression("-1"))
        if exponent in {"0.5", ".5"}:
            return node.left
    return None


@operator("SC102", "scale by d_k (or the width) instead of sqrt(d_k)")
def wrong_scale(module: cst.Module) -> Iterator[Mutation]:
    seen: set[int] = set()
    for flow in _flows(module):
        if not flow.score_softmaxes():
            continue
        for node in walk(flow.function.body):
            if id(node) in seen or not isinstance(node, cst.BaseExpression):
                continue
            replaced = _sqrt_to_plain(node)
            if replaced is not None and _feeds_softmax(flow, node):
                seen.add(id(node))
                yield Mutation("SC102", node, [(node, replaced)], "sqrt(d_k) -> d_k")
    for node, kept, split in _scale_removals(module):
        if split and kept is not None:
            yield Mutation("SC102", node, [(node, kept)], "one of two split scale factors removed")
    # self.scale = dim_head ** -0.5 in __init__, used by another method that computes attention
    for cls in classes(module):
        attrs = self_attribute_assignments(cls)
        used_in_scores = set()
        for method in class_methods(cls):
            text = code(method)
            if "softmax" in text or "scaled_dot_product" in text or "attention_interface" in text or "scaling=" in text:
                used_in_scores |= {n.split(".", 1)[1] for n in names_in(method) if n.startswith("self.")}
        for name, assigns in attrs.items():
            if not SCALE_NAME.search(name) or name not in used_in_scores:
                continue
            for assign in assigns:
                for node in walk(assign.value):
                    if id(node) in seen or not isinstance(node, cst.BaseExpression):
                        continue
                    replaced = _sqrt_to_plain(node)
                    if replaced is not None:
                        seen.add(id(node))
                        yield Mutation("SC102", node, [(node, replaced)], f"self.{name}: sqrt(d_k) -> d_k")
                        break


@operator("SC103", "softmax over the query axis (dim=-2) instead of the key axis")
def flip_softmax_dim(module: cst.Module) -> Iterator[Mutation]:
    for flow in _flows(module):
        for call, _, _, dim in _score_context(flow):
            if dim is not None and int_value(dim.value) == -1:
                yield Mutation("SC103", call, [(dim.value, cst.parse_expression("-2"))], "dim=-1 -> dim=-2")


def _mask_application(value: cst.BaseExpression) -> tuple[cst.BaseExpression, Callable[[cst.BaseExpression], cst.BaseExpression]] | None:
    """``s.masked_fill(m, v)`` / ``s + mask``: (scores operand, rebuild(other) applying the same mask)."""
    if isinstance(value, cst.Call) and call_name(value) in MASK_FILL_METHODS and is_method_call(value):
        assert isinstance(value.func, cst.Attribute)
        scores = value.func.value
        return scores, lambda other: value.with_changes(func=value.func.with_changes(value=other))
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
        if "mask" in code(value.right).lower() or "bias" in code(value.right).lower():
            return value.left, lambda other: value.with_changes(left=other)
    return None


@operator("SC104", "apply the mask after the softmax instead of before")
def mask_after_softmax(module: cst.Module) -> Iterator[Mutation]:
    for flow in _flows(module):
        for call, upstream, value, _ in _score_context(flow):
            # inline: softmax(s.masked_fill(m, v)) -> softmax(s).masked_fill(m, v)
            applied = _mask_application(value)
            if applied is not None and is_method_call(call) is False:
                scores, rebuild = applied
                input_arg = arg(call, 0, "input")
                assert input_arg is not None
                new_call = call.with_changes(args=[a.with_changes(value=scores) if a is input_arg else a for a in call.args])
                yield Mutation("SC104", call, [(call, rebuild(new_call))], "mask moved outside the softmax")
                continue
            # statement form: s = s.masked_fill(...)  ...  p = softmax(s)
            if not isinstance(value, cst.Name):
                continue
            softmax_statement = None
            for a in flow.assignments:
                if inside(call, a.value):
                    softmax_statement = a
            if softmax_statement is None or len(softmax_statement.statement.body) != 1:
                continue
            for a in flow.assignments:
                if a is softmax_statement:
                    break
                if a.targets != {value.value} or len(a.statement.body) != 1 or a.augmented:
                    continue
                applied = _mask_application(a.value)
                if applied is None or names_in(applied[0]) != {value.value}:
                    continue
                probs = softmax_statement.targets
                if len(probs) != 1 or not isinstance(softmax_statement.small, cst.Assign):
                    continue
                probs_name = next(iter(probs))
                if "." in probs_name or softmax_statement.value is not call:
                    continue
                moved = cst.Assign(
                    targets=[cst.AssignTarget(cst.Name(probs_name))],
                    value=applied[1](cst.Name(probs_name)),
                )
                both = f"{code(softmax_statement.small)}; {code(moved)}"
                yield Mutation(
                    "SC104",
                    softmax_statement.small,  # the site: where the mask is now applied, to the probabilities
                    [(a.small, cst.Pass()), (softmax_statement.small, both)],
                    "mask statement moved after the softmax",
                )


# ----------------------------------------------------------------------------------------- SC2xx


def _mask_consumers(module: cst.Module) -> set[str]:
    """Names (and ``self.x`` chains, and buffer names) passed as the mask of a masked_fill / where."""
    used: set[str] = set()
    for node in of_type(module, cst.Call):
        if call_name(node) in MASK_FILL_METHODS | {"where"}:
            first = arg(node, 0, "mask") if call_name(node) in MASK_FILL_METHODS else arg(node, 0, "condition")
            if first is not None:
                for name in names_in(first.value):
                    used.add(name)
                    used.add(name.rsplit(".", 1)[-1])
    return used


def _assigned_names(module: cst.Module, node: cst.CSTNode) -> set[str]:
    """The names a value containing ``node`` is stored under (assignment target, register_buffer name)."""
    out: set[str] = set()
    for candidate in of_type(module, cst.Assign) + of_type(module, cst.Call):
        if isinstance(candidate, cst.Assign) and _inside(node, candidate.value):
            for t in candidate.targets:
                chain = dotted(t.target) if isinstance(t.target, (cst.Name, cst.Attribute)) else None
                if chain:
                    out.add(chain)
                    out.add(chain.rsplit(".", 1)[-1])
        if isinstance(candidate, cst.Call) and call_name(candidate) == "register_buffer" and _inside(node, candidate):
            first = arg(candidate, 0, "name")
            if first is not None and isinstance(first.value, cst.SimpleString):
                out.add(first.value.evaluated_value)  # type: ignore[arg-type]
    return out


@operator("SC201", "make a bool mask float")
def bool_mask_float(module: cst.Module) -> Iterator[Mutation]:
    consumers = _mask_consumers(module)
    for node in of_type(module, cst.Call):
        replacement = None
        if call_name(node) == "bool" and is_method_call(node) and not node.args:
            assert isinstance(node.func, cst.Attribute)
            replacement = node.with_changes(func=node.func.with_changes(attr=cst.Name("float")))
        else:
            for a in node.args:
                if a.keyword is not None and a.keyword.value == "dtype" and dotted(a.value) in {"torch.bool", "bool"}:
                    replacement = node.with_changes(
                        args=[x.with_changes(value=cst.parse_expression("torch.float32")) if x is a else x for x in node.args]
                    )
        if replacement is None or not (_assigned_names(module, node) & consumers):
            continue
        yield Mutation("SC201", node, [(node, replacement)], "bool mask made float")


def _is_masking_value(node: cst.BaseExpression) -> bool:
    text = code(node).replace(" ", "")
    return text.startswith("-") or "inf" in text or "finfo" in text or "min" in text or "neg" in text


@operator("SC203", "invert a mask (masked_fill / where on the wrong positions)")
def invert_mask(module: cst.Module) -> Iterator[Mutation]:
    for flow in _flows(module):
        if not flow.score_softmaxes():
            continue
        for node in walk(flow.function.body):
            if not (isinstance(node, cst.Call) and call_name(node) in MASK_FILL_METHODS and is_method_call(node)):
                continue
            mask = arg(node, 0, "mask")
            fill = arg(node, 1, "value")
            if mask is None or fill is None or not _is_masking_value(fill.value) or not _feeds_softmax(flow, node):
                continue
            yield Mutation("SC203", node, [(mask.value, _inverted(mask.value))], "mask inverted")


def _inverted(mask: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(mask, cst.UnaryOperation) and isinstance(mask.operator, cst.BitInvert):
        return mask.expression
    if isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1:
        target = mask.comparisons[0]
        flipped = {cst.Equal: cst.NotEqual, cst.NotEqual: cst.Equal}.get(type(target.operator))
        if flipped is not None:
            return mask.with_changes(comparisons=[target.with_changes(operator=flipped())])
    return cst.parse_expression(f"~({code(mask)})")


def _causal_names(module: cst.Module) -> set[str]:
    """Names / attributes / buffers whose value is built by tril or triu."""
    out: set[str] = set()
    for node in of_type(module, cst.Call):
        if call_name(node) in {"tril", "triu", "tril_", "triu_"}:
            out |= _assigned_names(module, node)
    return out


@operator("SC204", "drop a causal mask")
def drop_causal_mask(module: cst.Module) -> Iterator[Mutation]:
    causal = _causal_names(module)
    for node in walk(module):
        if isinstance(node, cst.Arg) and node.keyword is not None and node.keyword.value == "is_causal":
            if isinstance(node.value, cst.Name) and node.value.value == "True":
                yield Mutation("SC204", node, [(node.value, cst.Name("False"))], "is_causal=True -> False")
    for flow in _flows(module):
        if not flow.score_softmaxes():
            continue
        for node in walk(flow.function.body):
            if not (isinstance(node, cst.Call) and call_name(node) in MASK_FILL_METHODS and is_method_call(node)):
                continue
            mask = arg(node, 0, "mask")
            if mask is None or not _feeds_softmax(flow, node):
                continue
            mask_names = flow.upstream(names_in(mask.value))
            mask_names |= {n.rsplit(".", 1)[-1] for n in mask_names}
            built_here = any(
                call_name(c) in {"tril", "triu"}
                for a in flow.assignments
                if a.targets & mask_names
                for c in walk(a.value)
                if isinstance(c, cst.Call)
            ) or any(isinstance(c, cst.Call) and call_name(c) in {"tril", "triu"} for c in walk(mask.value))
            if not (mask_names & causal or built_here):
                continue
            assert isinstance(node.func, cst.Attribute)
            yield Mutation("SC204", node, [(node, node.func.value)], "causal masked_fill removed")


@operator("SC205", "causal mask with diagonal=0 blocking the diagonal")
def causal_diagonal(module: cst.Module) -> Iterator[Mutation]:
    consumers = _mask_consumers(module)
    for node in of_type(module, cst.Call):
        if not (isinstance(node, cst.Call) and call_name(node) in {"tril", "triu"}):
            continue
        names = _assigned_names(module, node)
        if not names & consumers and not _inside_mask_use(module, node):
            continue
        method = is_method_call(node)
        diagonal = arg(node, 0 if method else 1, "diagonal")
        value = int_value(diagonal.value) if diagonal is not None else 0
        if call_name(node) == "triu" and value == 1:
            assert diagonal is not None
            yield Mutation("SC205", node, [(diagonal.value, cst.parse_expression("0"))], "triu diagonal=1 -> 0")
        elif call_name(node) == "tril" and value == 0:
            if diagonal is not None:
                new = node.with_changes(args=[a.with_changes(value=cst.parse_expression("-1")) if a is diagonal else a for a in node.args])
            else:
                args = list(node.args)
                if args:
                    args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                args.append(cst.Arg(keyword=cst.Name("diagonal"), value=cst.parse_expression("-1"), equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))))
                new = node.with_changes(args=args)
            yield Mutation("SC205", node, [(node, new)], "tril diagonal=0 -> -1 (diagonal blocked)")


def _inside_mask_use(module: cst.Module, node: cst.CSTNode) -> bool:
    for candidate in of_type(module, cst.Call):
        if call_name(candidate) in MASK_FILL_METHODS | {"where"}:
            first = candidate.args[0] if candidate.args else None
            if first is not None and _inside(node, first):
                return True
    return False


# ----------------------------------------------------------------------------------------- SC3xx


def _pe_additions(module: cst.Module) -> Iterator[tuple[cst.CSTNode, cst.BaseExpression, cst.BaseExpression]]:
    """``x + pe`` (BinaryOperation) and ``x += pe`` (AugAssign): (node, stream, table).

    In a chain ``words + positions + types`` the table is the positional term itself, never a sum
    that holds it with other terms (``(words + positions) + types`` would otherwise give the
    mutant ``types``, which drops the word embeddings too): the inner ``words + positions`` is the
    site."""
    for node in walk(module):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
            left, right = node.left, node.right
            if is_number(left) or is_number(right):
                continue
            if looks_positional(right) and not looks_positional(left) and not _is_sum(right):
                yield node, left, right
            elif looks_positional(left) and not looks_positional(right) and not _is_sum(left):
                yield node, right, left
        elif isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign):
            if looks_positional(node.value) and not looks_positional(node.target) and not is_number(node.value):
                yield node, node.target, node.value


def _is_sum(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)


def _stream_like(node: cst.BaseExpression) -> bool:
    """The other operand of a PE add is a token stream, not an index or a length."""
    text = code(node).lower()
    return not any(word in text for word in ("ids", "len", "offset", "index", "idx", "step", "range"))


@operator("SC301", "concatenate the positional encoding instead of adding it")
def concat_pe(module: cst.Module) -> Iterator[Mutation]:
    if not imports_torch(module):
        return
    for node, stream, table in _pe_additions(module):
        if not _stream_like(stream):
            continue
        cat = cst.parse_expression(f"torch.cat([{code(stream)}, {code(table)}], dim=-1)")
        if isinstance(node, cst.AugAssign):
            yield Mutation("SC301", node, [(node, cst.Assign(targets=[cst.AssignTarget(node.target)], value=cat))], "x += pe -> cat")
        else:
            yield Mutation("SC301", node, [(node, cat)], "x + pe -> cat")


@operator("SC302", "leave the PE table unsliced")
def unsliced_pe(module: cst.Module) -> Iterator[Mutation]:
    for node, stream, table in _pe_additions(module):
        if not _stream_like(stream):
            continue
        for sub in walk(table):
            if isinstance(sub, cst.Subscript) and looks_positional(sub.value):
                slices = [e.slice for e in sub.slice if isinstance(e.slice, cst.Slice)]
                if any(s.upper is not None and not is_number(s.upper) for s in slices):
                    yield Mutation("SC302", sub, [(sub, sub.value)], "pe[:T] -> pe")
                    break


@operator("SC303", "drop the positional encoding")
def drop_pe(module: cst.Module) -> Iterator[Mutation]:
    for node, stream, table in _pe_additions(module):
        if not _stream_like(stream):
            continue
        if isinstance(node, cst.AugAssign):
            yield Mutation("SC303", node, [(node, cst.Pass())], "x += pe removed")
        else:
            yield Mutation("SC303", node, [(node, stream)], "x + pe -> x")


# ----------------------------------------------------------------------------------------- SC4xx


def _linear_inits(cls: cst.ClassDef) -> dict[str, cst.Call]:
    """``self.x = nn.Linear(...)`` of a class, by attribute name (one assignment only)."""
    out: dict[str, cst.Call] = {}
    for name, assigns in self_attribute_assignments(cls).items():
        if len(assigns) == 1 and isinstance(assigns[0].value, cst.Call) and call_name(assigns[0].value) == "Linear":
            out[name] = assigns[0].value
    return out


QUERY_KEY = [("q_proj", "k_proj"), ("to_q", "to_k"), ("query", "key"), ("wq", "wk"), ("q_lin", "k_lin"), ("q", "k"), ("w_q", "w_k"), ("linear_q", "linear_k"), ("q_linear", "k_linear")]


@operator("SC401", "the key reuses the query projection")
def key_reuses_query(module: cst.Module) -> Iterator[Mutation]:
    for cls in classes(module):
        linears = _linear_inits(cls)
        for q_name, k_name in QUERY_KEY:
            if q_name not in linears or k_name not in linears:
                continue
            if code(linears[q_name]).replace(" ", "") != code(linears[k_name]).replace(" ", ""):
                continue
            for method in class_methods(cls):
                calls = [n for n in walk(method.body) if isinstance(n, cst.Call) and dotted(n.func) in {f"self.{q_name}", f"self.{k_name}"}]
                if not any(dotted(c.func) == f"self.{q_name}" for c in calls):
                    continue
                for c in calls:
                    if dotted(c.func) == f"self.{k_name}":
                        yield Mutation("SC401", c, [(c.func, cst.parse_expression(f"self.{q_name}"))], f"self.{k_name} -> self.{q_name}")


@operator("SC402", "head-count default that does not divide the width")
def heads_not_dividing(module: cst.Module) -> Iterator[Mutation]:
    for function in functions(module):
        params = {p.name.value: p for p in function.params.params + function.params.kwonly_params}
        width = [p for n, p in params.items() if WIDTH_NAME.match(n) and isinstance(p.default, cst.Integer)]
        heads = [p for n, p in params.items() if HEADS_NAME.match(n) and isinstance(p.default, cst.Integer)]
        if len(width) != 1 or len(heads) != 1:
            continue
        w, h = int(width[0].default.value), int(heads[0].default.value)  # type: ignore[union-attr]
        if h <= 0 or w % h:
            continue
        text = code(function.body).replace(" ", "")
        wn, hn = width[0].name.value, heads[0].name.value
        if not any(p in text for p in (f"{wn}//{hn}", f"{wn}/{hn}", f"{wn}%{hn}", f"{wn}//self.{hn}", f"{wn}/self.{hn}")):
            continue
        new = h + 1
        while w % new == 0:
            new += 1
        assert heads[0].default is not None
        yield Mutation("SC402", heads[0], [(heads[0].default, cst.Integer(str(new)))], f"{hn}={h} -> {new} (width {w})")


def _head_split_views(module: cst.Module) -> Iterator[tuple[cst.Call, list[cst.Arg], cst.Call | None]]:
    """``x.view(b, t, h, d)`` (4 plain positional args) and the ``.transpose(1, 2)`` right after it, if any."""
    parents = _parent_map(module)
    for node in of_type(module, cst.Call):
        if not (isinstance(node, cst.Call) and call_name(node) in {"view", "reshape"} and is_method_call(node)):
            continue
        args = list(node.args)
        if len(args) != 4 or any(a.keyword or a.star for a in args):
            continue
        attribute = parents.get(id(node))
        transpose = None
        if isinstance(attribute, cst.Attribute) and attribute.attr.value == "transpose":
            outer = parents.get(id(attribute))
            if isinstance(outer, cst.Call) and [int_value(a.value) for a in outer.args] == [1, 2]:
                transpose = outer
        head_text = code(args[2].value) + code(args[3].value)
        if transpose is None and "head" not in head_text.lower():
            continue
        yield node, args, transpose


@operator("SC403", "wrong head split (the width used as the head dim)")
def wrong_head_split(module: cst.Module) -> Iterator[Mutation]:
    for view, args, _ in _head_split_views(module):
        heads, head_dim = args[2].value, args[3].value
        if int_value(head_dim) == -1 or int_value(heads) in (-1, 1):
            continue  # a -1 absorbs the change; times a literal 1 (volo's class token) changes nothing
        widened = cst.parse_expression(f"({code(head_dim)}) * ({code(heads)})")
        yield Mutation("SC403", view, [(head_dim, widened)], "view(b, t, h, d) -> view(b, t, h, d * h)")


def _linear_widened(call: cst.Call, position: int, keyword: str) -> cst.Call | None:
    target = arg(call, position, keyword)
    if target is None:
        return None
    widened = cst.parse_expression(f"({code(target.value)}) * 2")
    return call.with_changes(args=[a.with_changes(value=widened) if a is target else a for a in call.args])


@operator("SC405", "mis-sized Linear whose output is added to the residual")
def residual_linear(module: cst.Module) -> Iterator[Mutation]:
    for cls in classes(module):
        linears = _linear_inits(cls)
        if not linears:
            continue
        yielded: set[str] = set()
        for method in class_methods(cls):
            for node in walk(method.body):
                if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add)):
                    continue
                for operand, other in ((node.right, node.left), (node.left, node.right)):
                    if not isinstance(other, (cst.Name, cst.Attribute)):
                        continue
                    if not isinstance(operand, cst.Call):
                        continue
                    inner = operand
                    # self.drop(self.proj(x)) / self.proj(x)
                    if dotted(inner.func) and dotted(inner.func).startswith("self.") and dotted(inner.func)[5:] not in linears and inner.args:  # type: ignore[union-attr]
                        if isinstance(inner.args[0].value, cst.Call) and "drop" in (dotted(inner.func) or ""):
                            inner = inner.args[0].value  # type: ignore[assignment]
                    name = (dotted(inner.func) or "")[5:] if (dotted(inner.func) or "").startswith("self.") else ""
                    if name in linears and name not in yielded:
                        new = _linear_widened(linears[name], 1, "out_features")
                        if new is not None:
                            yielded.add(name)
                            yield Mutation("SC405", linears[name], [(linears[name], new)], f"self.{name} out_features doubled (added to a residual)")


@operator("SC406", "mis-sized Linear in a layer chain")
def chain_linear(module: cst.Module) -> Iterator[Mutation]:
    for node in walk(module):
        # nn.Sequential(nn.Linear(a, b), act, nn.Linear(b, c))
        if isinstance(node, cst.Call) and call_name(node) == "Sequential":
            linears = [a.value for a in node.args if isinstance(a.value, cst.Call) and call_name(a.value) == "Linear"]
            if len(linears) >= 2:
                second = linears[1]
                assert isinstance(second, cst.Call)
                new = _linear_widened(second, 0, "in_features")
                if new is not None:
                    yield Mutation("SC406", second, [(second, new)], "second Linear of a Sequential: in_features doubled")
    for cls in classes(module):
        linears = _linear_inits(cls)
        for method in class_methods(cls):
            for node in walk(method.body):
                # self.fc2(act(self.fc1(x))) and self.fc2(self.fc1(x))
                if not (isinstance(node, cst.Call) and (dotted(node.func) or "").startswith("self.")):
                    continue
                outer = (dotted(node.func) or "")[5:]
                if outer not in linears or not node.args:
                    continue
                inner_calls = [n for n in walk(node.args[0].value) if isinstance(n, cst.Call) and (dotted(n.func) or "")[5:] in linears]
                if inner_calls:
                    new = _linear_widened(linears[outer], 0, "in_features")
                    if new is not None:
                        yield Mutation("SC406", linears[outer], [(linears[outer], new)], f"self.{outer} in_features doubled (after another Linear)")


@operator("SC404", "LayerNorm over the sequence length instead of the features")
def layernorm_wrong_dim(module: cst.Module) -> Iterator[Mutation]:
    for cls in classes(module):
        for method in class_methods(cls):
            if method.name.value != "__init__":
                continue
            params = [p.name.value for p in method.params.params + method.params.kwonly_params]
            seq = [p for p in params if SEQ_NAME.search(p)]
            text = code(method)
            config_seq = re.findall(r"\bconfig\.(max_position_embeddings|n_positions|max_seq_len|block_size|n_ctx)\b", text)
            if seq:
                replacement = seq[0]
            elif config_seq and "config" in params:
                replacement = f"config.{config_seq[0]}"
            else:
                continue
            for node in walk(method.body):
                if isinstance(node, cst.Call) and call_name(node) == "LayerNorm" and node.args:
                    first = node.args[0]
                    if first.keyword is not None and first.keyword.value != "normalized_shape":
                        continue
                    if code(first.value) == replacement:
                        continue
                    yield Mutation("SC404", node, [(first.value, cst.parse_expression(replacement))], f"LayerNorm({code(first.value)}) -> LayerNorm({replacement})")


# ----------------------------------------------------------------------------------------- SC5xx


class _Parents:
    """``parents.get(id(node))`` over the indexed tree."""

    def get(self, key: int) -> cst.CSTNode | None:
        from mutation_sites import _INDEX

        return _INDEX.parent.get(key) if _INDEX is not None else None


def _parent_map(module: cst.Module) -> _Parents:  # noqa: ARG001
    return _Parents()


def _method_on(parents: _Parents, receiver: cst.CSTNode) -> tuple[str, cst.Call] | None:
    """For ``receiver.m(...)``: (m, the call)."""
    attribute = parents.get(id(receiver))
    if isinstance(attribute, cst.Attribute) and attribute.value is receiver:
        call = parents.get(id(attribute))
        if isinstance(call, cst.Call) and call.func is attribute:
            return attribute.attr.value, call
    return None


@operator("SC501", "view after transpose without contiguous")
def drop_contiguous(module: cst.Module) -> Iterator[Mutation]:
    parents = _parent_map(module)
    for node in of_type(module, cst.Call):
        if not (isinstance(node, cst.Call) and call_name(node) == "contiguous" and is_method_call(node)):
            continue
        assert isinstance(node.func, cst.Attribute)
        receiver = node.func.value
        if not (isinstance(receiver, cst.Call) and call_name(receiver) in {"transpose", "permute"}):
            continue
        following = _method_on(parents, node)
        if following is None or following[0] != "view":
            continue
        yield Mutation("SC501", node, [(node, receiver)], ".contiguous() before .view removed")


@operator("SC502", "heads merged without the transpose back")
def merge_without_transpose(module: cst.Module) -> Iterator[Mutation]:
    parents = _parent_map(module)
    for node in of_type(module, cst.Call):
        if not (isinstance(node, cst.Call) and call_name(node) == "transpose" and is_method_call(node)):
            continue
        if [int_value(a.value) for a in node.args] not in ([1, 2], [2, 1]):
            continue
        assert isinstance(node.func, cst.Attribute)
        step = node
        following = _method_on(parents, step)
        if following is not None and following[0] == "contiguous":
            step = following[1]
            following = _method_on(parents, step)
        if following is None or following[0] not in {"view", "reshape"}:
            continue
        merge = following[1]
        if len([a for a in merge.args if not a.keyword]) not in (1, 2, 3) or len(merge.args) >= 4:
            continue
        if len(merge.args) == 3 and int_value(merge.args[1].value) == 1:
            continue  # one token (a class token: ``reshape(B, 1, C)``): (B, h, 1, d) and (B, 1, h, d) hold the same order
        yield Mutation("SC502", node, [(node, node.func.value)], "transpose before the merge removed")


@operator("SC503", "heads split without the transpose (viewed straight to (b, h, t, d))")
def split_without_transpose(module: cst.Module) -> Iterator[Mutation]:
    for view, args, transpose in _head_split_views(module):
        if transpose is None:
            continue
        swapped = view.with_changes(args=[args[0], args[2].with_changes(comma=args[1].comma), args[1].with_changes(comma=args[2].comma), args[3]])
        yield Mutation("SC503", view, [(transpose, swapped)], "view(b, t, h, d).transpose(1, 2) -> view(b, h, t, d)")


@operator("SC504", "keys transposed over the wrong axes")
def wrong_key_transpose(module: cst.Module) -> Iterator[Mutation]:
    for flow in _flows(module):
        if not flow.score_softmaxes():
            continue
        four_d = any(
            isinstance(n, cst.Call) and call_name(n) in {"view", "reshape"} and len(n.args) >= 4 for n in walk(flow.function.body)
        ) or "b h n d" in code(flow.function) or "transpose(1, 2)" in code(flow.function)
        for node in walk(flow.function.body):
            if not is_matmul(node) or not _feeds_softmax(flow, node):
                continue
            operands = [node.right] if isinstance(node, cst.BinaryOperation) else [a.value for a in node.args[:2]]  # type: ignore[union-attr]
            for operand in operands:
                if isinstance(operand, cst.Call) and call_name(operand) == "transpose" and is_method_call(operand):
                    axes = [int_value(a.value) for a in operand.args]
                    if axes in ([-2, -1], [-1, -2], [2, 3], [3, 2]):
                        assert isinstance(operand.func, cst.Attribute)
                        if four_d and _key_rank(flow.function, operand.func.value) != 3:
                            new = operand.with_changes(args=[operand.args[0].with_changes(value=cst.Integer("1")), operand.args[1].with_changes(value=cst.Integer("2"))])
                            yield Mutation("SC504", operand, [(operand, new)], "transpose(-2, -1) -> transpose(1, 2)")
                        else:
                            yield Mutation("SC504", operand, [(operand, cst.Attribute(value=operand.func.value, attr=cst.Name("T")))], "transpose(-2, -1) -> .T")


def _key_rank(function: cst.FunctionDef, key: cst.BaseExpression) -> int | None:
    """The rank of a key named by ``key`` when the function spells it out: the last assignment to
    that name is a ``view`` / ``reshape`` of n sizes (rank n), or the pieces of one
    (``.reshape(3, B * h, N, -1).unbind(0)``: rank n - 1). On a 3-D key ``transpose(1, 2)`` is
    ``transpose(-2, -1)``: not a bug."""
    if not isinstance(key, cst.Name):
        return None
    rank = None
    for node in walk(function.body):
        if not isinstance(node, cst.Assign):
            continue
        names = [t.target for t in node.targets]
        flat = [e.value for t in names if isinstance(t, (cst.Tuple, cst.List)) for e in t.elements] + names
        if not any(isinstance(n, cst.Name) and n.value == key.value for n in flat):
            continue
        value, pieces = node.value, False
        if isinstance(value, cst.Call) and call_name(value) == "unbind" and is_method_call(value):
            value, pieces = value.func.value, True  # type: ignore[union-attr]
        if isinstance(value, cst.Call) and call_name(value) in {"view", "reshape"} and is_method_call(value):
            count = len(value.args)
            rank = count - 1 if pieces else count
        else:
            rank = None
    return rank


@operator("SC505", "a matmul operand left untransposed")
def untransposed_operand(module: cst.Module) -> Iterator[Mutation]:
    for node in walk(module):
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.MatrixMultiply):
            operand = node.right
        elif isinstance(node, cst.Call) and call_name(node) in {"matmul", "bmm"} and len(node.args) >= 2:
            operand = node.args[1].value
        else:
            continue
        if isinstance(operand, cst.Call) and call_name(operand) == "transpose" and is_method_call(operand):
            assert isinstance(operand.func, cst.Attribute)
            yield Mutation("SC505", operand, [(operand, operand.func.value)], "transpose of the right operand removed")
        elif isinstance(operand, cst.Attribute) and operand.attr.value in {"mT", "T"}:
            yield Mutation("SC505", operand, [(operand, operand.value)], ".mT of the right operand removed")


BATCH_FIRST_LAYERS = {"MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "Transformer"}


@operator("SC507", "batch_first=True dropped from a torch.nn attention layer")
def drop_batch_first(module: cst.Module) -> Iterator[Mutation]:
    for node in of_type(module, cst.Call):
        if isinstance(node, cst.Call) and call_name(node) in BATCH_FIRST_LAYERS:
            for a in node.args:
                if a.keyword is not None and a.keyword.value == "batch_first" and code(a.value) == "True":
                    yield Mutation("SC507", node, [(a.value, cst.Name("False"))], "batch_first=True -> False")


# ----------------------------------------------------------------------------------------- SC6xx


@operator("SC601", "drop model.eval() / model.train() in a training loop")
def drop_mode_switch(module: cst.Module) -> Iterator[Mutation]:
    text = source_of(module)
    if ".backward(" not in text or ".eval()" not in text or ".train(" not in text:
        return
    for node in walk(module):
        if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Expr):
            call = node.body[0].value
            if isinstance(call, cst.Call) and call_name(call) in {"eval", "train"} and is_method_call(call):
                if call_name(call) == "train" and call.args and code(call.args[0].value) != "True":
                    continue
                yield Mutation("SC601", node.body[0], [(node.body[0], cst.Pass())], f".{call_name(call)}() removed")


LOSS_MODULES = {"CrossEntropyLoss", "NLLLoss"}
LOSS_FUNCTIONS = {"cross_entropy", "nll_loss"}
# Hugging Face outputs whose ``logits`` are documented as ``(batch_size, sequence_length, V)``
# (transformers/modeling_outputs.py): a value given as their ``logits=`` is per token, at least 3-D.
PER_TOKEN_OUTPUTS = re.compile(r"^(\w*CausalLMOutput\w*|\w*MaskedLMOutput|Seq2SeqLMOutput|Seq2SeqMoEOutput|TokenClassifierOutput)$")
RANK_KEEPING_METHODS = {"contiguous", "float", "half", "double", "to", "type", "clone", "detach", "type_as"}


def _loss_attributes(module: cst.Module) -> set[str]:
    """``self.x`` chains bound anywhere in the file to ``CrossEntropyLoss(...)`` / ``NLLLoss(...)``."""
    bound: set[str] = set()
    for node in of_type(module, cst.Assign):
        if isinstance(node.value, cst.Call) and call_name(node.value) in LOSS_MODULES:
            for t in node.targets:
                bound |= {n for n in target_names(t.target) if n.startswith("self.")}
    return bound


def _loss_calls(flow: FunctionFlow, attributes: set[str]) -> Iterator[cst.Call]:
    """``F.cross_entropy(...)`` / ``nll_loss(...)``, and calls of a loss module: a local name bound
    to one, a ``self.`` attribute of ``attributes``, or ``nn.CrossEntropyLoss()(...)`` itself."""
    modules = set(attributes)
    for a in flow.assignments:
        if isinstance(a.value, cst.Call) and call_name(a.value) in LOSS_MODULES:
            modules |= a.targets
    for node in walk(flow.function.body):
        if not isinstance(node, cst.Call):
            continue
        if call_name(node) in LOSS_FUNCTIONS or dotted(node.func) in modules:
            yield node
        elif isinstance(node.func, cst.Call) and call_name(node.func) in LOSS_MODULES:
            yield node


def _indexed_rank(node: cst.Subscript) -> int:
    """The least rank ``x[...]`` proves of ``x``: its indices when none is ``...`` or ``None``."""
    elements = [e.slice for e in node.slice]
    if any(isinstance(e, cst.Index) and (isinstance(e.value, (cst.Ellipsis)) or code(e.value) == "None") for e in elements):
        return 0
    return len(elements)


def _keeps_rank(value: cst.BaseExpression, source: str) -> bool:
    """``value`` is ``source`` with the same rank: slices only, or a dtype / device / memory method."""
    if dotted(value) == source:
        return True
    if isinstance(value, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in value.slice):
        return _keeps_rank(value.value, source)
    if isinstance(value, cst.Call) and is_method_call(value) and call_name(value) in RANK_KEEPING_METHODS:
        assert isinstance(value.func, cst.Attribute)
        return _keeps_rank(value.func.value, source)
    return False


def _proves_3d(node: cst.CSTNode, name: str) -> bool:
    """One use of ``name`` that proves it at least 3-D (see ``drop_flatten``)."""
    if isinstance(node, cst.Subscript) and dotted(node.value) == name:
        return _indexed_rank(node) >= 3
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape":
        if dotted(node.value.value) == name and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            return (int_value(node.slice[0].slice.value) or 0) >= 2
    if isinstance(node, cst.Call) and is_method_call(node) and dotted(node.func.value) == name:  # type: ignore[union-attr]
        dims = [int_value(a.value) for a in node.args if a.keyword is None or a.keyword.value in {"dim", "dim0", "dim1"}]
        if call_name(node) in {"size", "transpose"} and any(d is not None and d >= 2 for d in dims):
            return True
    if isinstance(node, cst.Call) and PER_TOKEN_OUTPUTS.match(call_name(node) or ""):
        return any(a.keyword is not None and a.keyword.value == "logits" and dotted(a.value) == name for a in node.args)
    if isinstance(node, cst.Assign) and len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Tuple):
        value = node.value
        shape_of = None
        if isinstance(value, cst.Attribute) and value.attr.value == "shape":
            shape_of = value.value
        elif isinstance(value, cst.Call) and call_name(value) == "size" and not value.args and is_method_call(value):
            shape_of = value.func.value  # type: ignore[union-attr]
        elements = node.targets[0].target.elements
        return shape_of is not None and dotted(shape_of) == name and len(elements) >= 3 and not any(isinstance(e, cst.StarredElement) for e in elements)
    return False


def _per_token(flow: FunctionFlow, name: str | None, depth: int = 0) -> bool:
    """``name`` is provably at least 3-D in ``flow``'s function (see ``drop_flatten``)."""
    if name is None or depth > 4:
        return False
    assigned = [a for a in flow.assignments if name in a.targets]
    if any(not _keeps_rank(a.value, name) for a in assigned[1:]):
        return False  # rebound to something else after its first value: its rank is not one fact
    if any(_proves_3d(node, name) for node in walk(flow.function.body)):
        return True
    if assigned and len(assigned[0].targets) == 1 and not assigned[0].augmented:
        value = assigned[0].value
        if isinstance(value, cst.Call) and call_name(value) in {"view", "reshape"} and is_method_call(value):
            return len(value.args) >= 3 and not any(a.star for a in value.args)
        source = value
        while True:
            if isinstance(source, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in source.slice):
                source = source.value
            elif isinstance(source, cst.Call) and is_method_call(source) and call_name(source) in RANK_KEEPING_METHODS:
                source = source.func.value  # type: ignore[union-attr]
            else:
                break
        if source is not value and dotted(source) not in (None, name):
            return _per_token(flow, dotted(source), depth + 1)
    return False


@operator("SC602", "drop the flatten before cross_entropy")
def drop_flatten(module: cst.Module) -> Iterator[Mutation]:
    """``loss(logits.view(-1, V), targets)`` -> ``loss(logits, targets)``.

    The loss is ``F.cross_entropy`` / ``F.nll_loss`` or a call of a loss module (a local name or a
    ``self.`` attribute of the file bound to ``CrossEntropyLoss(...)`` / ``NLLLoss(...)``, or
    ``nn.CrossEntropyLoss()(...)``); the flatten is ``.view(-1, V)`` / ``.reshape(-1, V)`` /
    ``.flatten(0, 1)`` of a name. Dropping it from 2-D ``(N, C)`` logits changes nothing, so it is
    planted only where that name is provably at least 3-D in the function (then the mutant gives
    ``(B, T, V)`` logits with the original targets: flattened ``(B*T,)`` ones make torch raise, and
    ``(B, T)`` ones read the positions as classes). The proof is one of:

    - a subscript ``x[a, b, c]`` of three or more indices, none ``...`` or ``None``;
    - ``x.shape[k]`` / ``x.size(k)`` / ``x.transpose(.., k)`` with a literal ``k >= 2``;
    - ``a, b, c = x.shape`` (or ``x.size()``): three or more targets, none starred;
    - ``x = y.view(a, b, c)`` / ``reshape`` of three or more arguments;
    - ``x`` given as ``logits=`` to a Hugging Face output whose logits are documented per token
      ``(batch_size, sequence_length, V)``: ``*CausalLMOutput*``, ``*MaskedLMOutput``,
      ``Seq2SeqLMOutput``, ``TokenClassifierOutput`` (``SequenceClassifierOutput``'s are 2-D);
    - ``x = y[slices]`` / ``y.contiguous()`` / ``y.float()`` ... of a name ``y`` proved so.

    A name rebound in the function to anything but such a rank-keeping form of itself gets none.
    """
    text = source_of(module)
    if not any(word in text for word in (*LOSS_MODULES, *LOSS_FUNCTIONS)):
        return
    attributes = _loss_attributes(module)
    for flow in _flows(module):
        for node in _loss_calls(flow, attributes):
            first = arg(node, 0, "input")
            if first is None:
                continue
            value = first.value
            if not (isinstance(value, cst.Call) and is_method_call(value)):
                continue
            assert isinstance(value.func, cst.Attribute)
            logits = dotted(value.func.value)
            if call_name(value) in {"view", "reshape"}:
                args = [int_value(a.value) for a in value.args]
                if not (len(value.args) == 2 and args[0] == -1 and not any(a.star for a in value.args)):
                    continue
                description = f"logits.{call_name(value)}(-1, V) -> logits"
            elif call_name(value) == "flatten" and [int_value(a.value) for a in value.args] == [0, 1]:
                description = "logits.flatten(0, 1) -> logits"
            else:
                continue
            if _per_token(flow, logits):
                yield Mutation("SC602", value, [(value, value.func.value)], description)


@operator("SC603", "drop the next-token target shift")
def drop_target_shift(module: cst.Module) -> Iterator[Mutation]:
    """``labels[..., 1:]`` -> ``labels[..., :-1]`` where the value reaches a loss next to a ``[..., :-1]`` slice."""
    for flow in _flows(module):
        loss_calls = [
            n for n in walk(flow.function.body)
            if isinstance(n, cst.Call) and ("loss" in (call_name(n) or "").lower() or call_name(n) in {"cross_entropy", "nll_loss"})
        ]
        if not loss_calls:
            continue
        into_loss: set[str] = set()
        for call in loss_calls:
            for a in call.args:
                into_loss |= flow.upstream(names_in(a.value))
        subs = [n for n in walk(flow.function.body) if isinstance(n, cst.Subscript)]
        has_drop_last = any(
            any(isinstance(e.slice, cst.Slice) and e.slice.lower is None and int_value(e.slice.upper) == -1 for e in s.slice) for s in subs
        )
        if not has_drop_last:
            continue
        for sub in subs:
            reaches = any(inside(sub, a.value) for call in loss_calls for a in call.args) or any(
                a.targets & into_loss and inside(sub, a.value) for a in flow.assignments
            )
            if not reaches:
                continue
            for element in sub.slice:
                s = element.slice
                if isinstance(s, cst.Slice) and int_value(s.lower) == 1 and s.upper is None and s.step is None:
                    new_slice = s.with_changes(lower=None, upper=cst.parse_expression("-1"))
                    yield Mutation("SC603", sub, [(s, new_slice)], "targets[..., 1:] -> targets[..., :-1]")
