"""SC303 missing-positional-encoding."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.tags import ParameterTag
from shapecheck.engine.domain.values import (
    MaskedTag,
    PositionTag,
    ScoresTag,
    TensorValue,
    TokenEmbeddingTag,
    as_tensor,
    positional_features,
)
from shapecheck.engine.facts.records import Assignment, FileFacts, OpEvent
from shapecheck.engine.facts.tables import dropped_tables
from shapecheck.engine.facts.unread import dead_stores
from shapecheck.engine.ops.base import positions_only
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule

class MissingPositionalEncoding(Rule):
    """Token embeddings reach attention with no positional information at all.

    ## What it does
    Follows token embeddings (the output of an `nn.Embedding` looked up with token ids, or the
    patches a ViT cuts with a non-overlapping, unpadded `Conv2d(kernel_size=p, stride=p)`) into
    attention. If the scores are computed from them and nothing positional was ever mixed in on
    the way — no positional table or embedding added, no rotary or ALiBi / relative bias, nothing
    derived from `torch.arange` positions — it reports the embedding lookup. The path is followed
    as data flow: a value the engine cannot see into (a parameter such as rotary `cos, sin` or a
    relative bias, the result of an unknown call) that is added to, multiplied with or contracted
    with the embeddings, the queries or the scores may carry positions, and the site is left alone.
    So is positional information that reaches attention as its mask or bias (ALiBi given to SDPA).
    A stream given positions by a zero-padded conv over the tokens anywhere in the model (CPVT's
    and Twins' position encoding, placed after the first block) is not reported, and neither are
    patches cut by an overlapping or zero-padded conv (SegFormer): the zeros at the border tell
    positions apart, by design.
    Positional embeddings bound to a local name that the function never reads again (a lookup with
    position ids, a sinusoidal buffer or a learned per-position table cut to the sequence, left out
    of the sum) are reported where they are computed, even when the stream goes on to an encoder
    the engine cannot see (a Hugging Face `Embeddings.forward` analysed alone).
    A positional table a module declares (a parameter `(1, N, d)`, N not 1) that the code never
    adds is reported too, where the stream goes on to code the engine cannot see (an imported
    `PatchEmbed`, an encoder in another file): at an `if self.pos_embed is not None:` (or a local
    table's, or the `if self.use_pos_embed:` the constructor declared the table under) whose block, and the code that may run around it, never reads the table's values nor
    calls a method that may, and at the declaration of a table no code of the file reads at all
    (initialising, freezing or resampling it are not uses).
    When the function that looks the tokens up also computes positional embeddings that then reach
    nothing (`position_embeddings = self.position_embeddings(ids)` never added), the finding is
    reported there: that is where the fix goes.

    ## Why is this bad?
    Self-attention is permutation-equivariant: without positions, "dog bites man" and "man bites
    dog" are the same set of tokens to the model. It trains and runs, and cannot learn anything
    that depends on word order.

    ## Example
    ```python
    x = self.tok_emb(idx)
    x = self.blocks(x)
    ```

    ## Use instead
    ```python
    x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.size(1), device=idx.device))
    x = self.blocks(x)
    ```
    """

    code = "SC303"
    name = "missing-positional-encoding"
    severity = Severity.WARNING
    summary = "Token embeddings reach attention with no positional information at all."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        sites = facts.events_of("softmax") + facts.events_of("scaled_dot_product_attention") + facts.events_of("module.MultiheadAttention")
        for layer in TRANSFORMER_LAYERS:
            sites = sites + facts.events_of(layer)
        # A stream given positions by a conv position encoding anywhere (CPVT and Twins place it
        # after the first block, whose attention sees none by design) is not missing them.
        reported = _conv_positioned(facts)
        dropped = _dropped_positions(facts)
        tables = dropped_tables(facts, _table)
        # Functions where a positional table is checked for and dropped: that is where the fix goes.
        guarded = {id(function) for _, _, how, function in tables if how == "guard" and function is not None}
        quiet: set[int] = set()
        runs_of = _runs_by_node(facts)
        for event in sites:
            tensor = _attention_input(event)
            if tensor is None:
                continue
            token = _query_tokens(event, tensor)
            if token is None or id(token.node) in reported:
                continue
            operands = _attention_operands(event, tensor)
            arriving = [other.tag(PositionTag) for other in operands if other.has(PositionTag)]
            if arriving:
                # Positions may arrive here (a causal mask, a bias, a value the engine cannot see).
                # Positions dropped where these tokens were looked up are not judged either when
                # positions are known to arrive (a relative bias, a table added on another path) or
                # may arrive with a mask (a causal mask tells positions apart); a value the engine
                # cannot see somewhere along the stream (an unseen layer) is no reason to compute
                # an absolute encoding and drop it.
                masked = tensor.has(MaskedTag) if event.op == "softmax" else operands[-1].has(PositionTag)
                if masked or any(position.kind != "unknown" for position in arriving):
                    quiet |= runs_of.get(id(token.node), set())
                continue
            reported.add(id(token.node))
            # Positions bound beside the tokens and never read are the same root cause: one finding.
            lookups = runs_of.get(id(token.node), set())
            bound = dict.fromkeys(
                dropped.pop(key)[0] for key in [key for key, (_, functions) in dropped.items() if functions & lookups]
            )
            unused = _unused_positions(facts, token.node)
            if unused is not None:
                # The positions are computed beside the tokens and dropped: the fix goes here.
                yield Report(
                    unused,
                    "these positional embeddings are computed but never reach attention: the token "
                    "embeddings beside them reach self-attention without any positional encoding",
                    hint="add them to the token embeddings (embeddings = embeddings + position_embeddings)",
                )
                continue
            for statement in bound:
                yield Report(
                    statement,
                    "these positional embeddings are computed and never used: the token embeddings "
                    "beside them reach self-attention without any positional encoding",
                    hint="add them to the token embeddings (embeddings = embeddings + position_embeddings)",
                )
            if bound or lookups & guarded:
                continue
            yield Report(
                token.node,
                "these token embeddings reach self-attention without any positional encoding; attention "
                "cannot tell token order apart",
                hint="add a positional embedding (learned or sinusoidal) or use rotary embeddings",
            )
        # A positional table checked for and then not added, or declared and never read.
        for node, name, how, _function in tables:
            if how == "guard":
                yield Report(
                    node,
                    f"`{name}` is checked here, but the code it guards never uses it: the positional "
                    "table is not added, and the stream goes on without positional information",
                    hint=f"add it to the stream inside this block (x = x + {name})",
                )
            else:
                yield Report(
                    node,
                    f"this per-position table (`self.{name}`) is declared but nothing reads its values: the "
                    "module never adds it, and its stream goes on without positional information",
                    hint=f"add it where the patches or tokens are embedded (x = x + self.{name})",
                )
        # Positions bound to a name the function never reads, where the tokens' way to attention
        # is not seen (an encoder in another file): reported where they are dropped.
        for statement in dict.fromkeys(statement for statement, functions in dropped.values() if not functions & quiet):
            yield Report(
                statement,
                "these positional embeddings are computed and never used: the embeddings they were "
                "made for go on without positional information",
                hint="add them to the token embeddings (embeddings = embeddings + position_embeddings)",
            )


#: torch's encoder and decoder layers: where each takes the stream its self-attention orders and
#: the mask (or bias) of that self-attention, by position after the module itself (argument 0) or by
#: keyword. A decoder's ``memory`` (its argument 2) is not an operand: positions in the encoder's states
#: reach the decoder stream only through cross-attention, which does not order that stream.
TRANSFORMER_LAYERS = {
    "module.TransformerEncoder": ((1, "src"), (2, "mask")),
    "module.TransformerEncoderLayer": ((1, "src"), (2, "src_mask")),
    "module.TransformerDecoder": ((1, "tgt"), (3, "tgt_mask")),
    "module.TransformerDecoderLayer": ((1, "tgt"), (3, "tgt_mask")),
}


#: Position tags of a positional embedding or table itself (not of a tensor it reached, nor a guess).
POSITIONAL_SOURCES = ("table", "embedding", "learned")


def _conv_positioned(facts: FileFacts) -> set[int]:
    """Token embeddings (by lookup node) that some tensor carries with a conv position encoding."""
    found: set[int] = set()
    for event in facts.events:
        result = event.result
        if not isinstance(result, TensorValue):
            continue
        position, token = result.tag(PositionTag), result.tag(TokenEmbeddingTag)
        if position is not None and token is not None and position.kind == "conv":
            found.add(id(token.node))
    return found


def _positions_alone(value: object) -> bool:
    """A positional table or embedding itself (not a stream it was added to, not a guess), as
    floats: integer position ids are not their embeddings."""
    if not isinstance(value, TensorValue) or value.has(TokenEmbeddingTag) or value.dtype in ("int", "bool"):
        return False
    return positional_features(value)


def _broadcast_buffer(value: object) -> bool:
    """A buffer registered from a value the engine cannot see (``get_2d_sincos_pos_embed(...)``),
    cut or reshaped into a per-token table with a batch axis of 1, ``(1, N, d)`` with N not 1:
    made to be broadcast-added to a batch of tokens (OmniGen's ``_cropped_pos_embed``), as floats."""
    if not isinstance(value, TensorValue) or value.dtype in ("int", "bool") or value.has(TokenEmbeddingTag):
        return False
    parameter = value.tag(ParameterTag)
    shape = value.shape
    if parameter is None or parameter.shape is not None or value.has(PositionTag):
        return False
    if shape is None or shape.variadic or shape.rank is None or shape.rank < 3:
        return False
    first, rows = shape.dims[0], shape.dims[-2]
    return first.is_const and first.value == 1 and not (rows.is_const and rows.value == 1)


def _table(value: object) -> bool:
    """A positional table itself, as floats: a positional table or embedding, or a parameter
    declared as a per-token table made to broadcast over the batch (``(1, N, d)``, N not 1)."""
    return (
        isinstance(value, TensorValue)
        and value.dtype not in ("int", "bool")
        and positions_only(value)
        and (value.has(ParameterTag) or _positions_alone(value))
    )


def _runs_by_node(facts: FileFacts) -> dict[int, set[int]]:
    """For each evaluated node (by id), the functions (by node id) of the runs that evaluated it."""
    table: dict[int, set[int]] = {}
    for event in facts.events:
        if event.run is not None:
            table.setdefault(id(event.node), set()).add(id(event.run.node))
    return table


def _dropped_positions(facts: FileFacts) -> dict[int, tuple[object, set[int]]]:
    """Positional embeddings or tables assigned to a local name that the function never reads
    (``position_embeddings = self.position_embeddings(position_ids)`` and nothing more): the
    assignment statements, by the node that made the positions. In every run where the engine
    knows the value, it is positions alone (a table, a lookup with position ids, a learned
    per-position parameter cut to the sequence), never a token stream they were added to, nor the
    integer position ids themselves. Each with the functions (by node) whose runs bound it."""
    verdicts: dict[tuple[int, str], list[object]] = {}
    statements: dict[tuple[int, str], object] = {}
    functions: dict[tuple[int, str], set[int]] = {}
    # Statements that bound positions in some run (the others cannot drop any): only their
    # functions' text is read, and every run of such a statement is judged below.
    positional = {
        (id(assignment.node), assignment.name)
        for run in facts.runs
        for assignment in run.assignments
        if _positions_alone(assignment.value) or _broadcast_buffer(assignment.value)
    }

    def candidate(assignment: Assignment) -> bool:
        # A name written to be thrown away (``_``, ``_pos``) is not judged.
        return not assignment.name.startswith("_") and (id(assignment.node), assignment.name) in positional

    for _run, assignment in dead_stores(facts, candidate):
        key = (id(assignment.node), assignment.name)
        statements[key] = assignment.node
        value = assignment.value
        if not isinstance(value, TensorValue) or (value.shape is None and not value.tags):
            verdicts.setdefault(key, [])  # this run does not know what it is
            continue
        if _positions_alone(value):
            verdicts.setdefault(key, []).append(value.tag(PositionTag).node)  # type: ignore[union-attr]
        elif _broadcast_buffer(value):
            verdicts.setdefault(key, []).append(assignment.node)
        else:
            verdicts.setdefault(key, []).append(None)
        functions.setdefault(key, set()).add(id(_run.node))
    found: dict[int, tuple[object, set[int]]] = {}
    for key, nodes in verdicts.items():
        if nodes and all(node is not None for node in nodes):
            for node in nodes:
                found[id(node)] = (statements[key], functions[key])
    return found


def _unused_positions(facts: FileFacts, lookup: object) -> object | None:
    """A positional embedding computed in the function that looked the tokens up (in a run of it)
    and then dropped: looked up, sliced or computed there, and then nothing was made of it (reshaped
    or moved, it is still the same positions). Positions given to another stream there (an encoder's
    source beside a decoder's target) were not dropped."""
    runs = {id(event.run.node) for event in facts.events if event.node is lookup and event.run is not None}
    consumed: set[int] = set()
    for event in facts.events:
        kept = event.result_tensor.tag(PositionTag)
        for operand in (*event.args, *event.kwargs.values()):
            position = as_tensor(operand).tag(PositionTag)
            if position is not None and (kept is None or kept.node is not position.node):
                consumed.add(id(position.node))
    for event in facts.events:
        if event.run is None or id(event.run.node) not in runs:
            continue
        position = event.result_tensor.tag(PositionTag)
        if position is not None and position.kind in POSITIONAL_SOURCES and position.node is event.node and id(event.node) not in consumed:
            return event.node
    return None


def _query_tokens(event: OpEvent, tensor: TensorValue) -> TokenEmbeddingTag | None:
    """The token embeddings self-attention orders here: those the queries come from, when the keys
    come from them too. Keys cut from the tokens by a strided conv (SegFormer's and PVT's spatial
    reduction) are not the sequence attention orders, and cross-attention (keys from another
    sequence: an image, an encoder's states) is not where a stream's positions are needed."""
    if event.op == "softmax":
        scores = tensor.tag(ScoresTag)  # the softmax of scores only (_attention_input)
        query, key = scores.query, scores.key
    elif event.op == "scaled_dot_product_attention":
        query, key = tensor, event.tensor(1, "key")
    elif event.op == "module.MultiheadAttention":
        query, key = tensor, event.tensor(2, "key")
    else:
        return tensor.tag(TokenEmbeddingTag)  # an encoder layer attends its one input to itself
    if not _seen(query):
        # Scores from a query the engine cannot see: the tokens they were computed from (an unseen
        # query given to SDPA or MultiheadAttention is ``tensor`` itself: no tokens).
        return tensor.tag(TokenEmbeddingTag)
    token = query.tag(TokenEmbeddingTag)
    if token is None or not _seen(key):
        return token
    keys = key.tag(TokenEmbeddingTag)
    return token if keys is not None and keys.node is token.node else None


def _seen(tensor: TensorValue) -> bool:
    return tensor.shape is not None or bool(tensor.tags)


def _attention_input(event: OpEvent) -> TensorValue | None:
    if event.op == "softmax":
        scores = event.tensor(0, "input")
        return scores if scores.has(ScoresTag) else None
    if event.op == "scaled_dot_product_attention":
        return event.tensor(0, "query")
    if event.op == "module.MultiheadAttention":
        return event.tensor(1, "query")
    return event.tensor(*TRANSFORMER_LAYERS[event.op][0])


def _attention_operands(event: OpEvent, tensor: TensorValue) -> list[TensorValue]:
    """Every tensor through which positions may reach this attention: the scores (or the query),
    the key, and an attention mask or bias (ALiBi, a relative bias given to SDPA as attn_mask)."""
    if event.op == "softmax":
        return [tensor]
    if event.op == "scaled_dot_product_attention":
        return [tensor, event.tensor(1, "key"), event.tensor(3, "attn_mask")]
    if event.op == "module.MultiheadAttention":
        return [tensor, event.tensor(2, "key"), event.tensor(6, "attn_mask")]
    return [tensor, event.tensor(*TRANSFORMER_LAYERS[event.op][1])]
