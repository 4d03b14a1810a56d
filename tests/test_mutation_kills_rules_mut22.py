"""Decisions of SC303 (missing-positional-encoding) that mutation testing found unpinned
(benchmarks/mutation_testing.py, branch mut22).

Each test names the rule code, so ``-k SC303`` selects it with the rule's other tests. The snippets
are in ``tests/data/sc303/`` and run under torch as written (``python tests/data/sc303/<file>``);
each test pins where the rule reports (exact lines and columns) and where it stays silent.
"""

from __future__ import annotations

from pathlib import Path

from shapecheck.linter import lint_source

DATA = Path(__file__).parent / "data" / "sc303"


def _sc303(name: str) -> list[tuple[int, int]]:
    result = lint_source((DATA / name).read_text(), name, {"SC303"})
    assert result.error is None, result.error
    return sorted((d.line, d.column) for d in result.diagnostics if d.code == "SC303")


def test_SC303_torch_encoder_and_decoder_layers_read_their_input_and_self_attention_mask() -> None:
    """``_attention_input`` / ``_attention_operands`` on ``nn.TransformerEncoder`` (``src``, ``mask``),
    ``nn.TransformerEncoderLayer`` (``src``, ``src_mask``) and the decoders (``tgt``, and ``tgt_mask``:
    argument 3 after the module, since ``memory`` is argument 2). An ALiBi distance bias given as the
    self-attention mask, by keyword or by position, gives the positions: those eight classes are
    silent. The stream given by keyword (``src=x``, ``tgt=x``) is read like the positional one and
    reported at its lookup (before, not read: silent); a decoder's positional ``tgt_mask`` is its
    argument 3 (before, argument 2, the memory, was read and the bias missed: reported). A layer
    given the bare tokens by position, with no mask (and a decoder layer its memory), is reported."""
    assert _sc303("transformer_layers.py") == [(46, 13), (69, 13), (92, 13), (115, 13), (135, 29), (158, 27), (163, 27)]


def test_SC303_positions_of_the_encoder_states_do_not_order_the_decoder_stream() -> None:
    """The tutorial's ``Seq2SeqTransformer`` with the target's positional encoding left out: the
    decoder's memory carries the source's positions, which reach the target stream only through
    cross-attention (each target token's output is the same whatever its place), so the target
    lookup is reported. Before, the memory was read as the decoder's mask and nothing was reported.
    With the encoding applied to the target as well, the model is silent."""
    source = (DATA / "transformer_layers.py").read_text()
    found = _sc303("transformer_layers.py")
    assert (135, 29) in found
    fixed = source.replace("self.decoder(self.tgt_tok_emb(tgt),", "self.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)),")
    assert fixed != source
    result = lint_source(fixed, "transformer_layers.py", {"SC303"})
    assert sorted((d.line, d.column) for d in result.diagnostics) == [f for f in found if f != (135, 29)]


def test_SC303_the_key_of_sdpa_and_multihead_attention_decides_cross_attention() -> None:
    """``_query_tokens``: the key is SDPA's argument 1 and MultiheadAttention's argument 2 (after the
    module) also when the value comes by keyword, so attention to another embedded sequence is
    cross-attention (not judged). ``_seen``: keys of a known shape and nothing else (annotated encoder
    states), or tokens of unknown shape (retrieved neighbours concatenated), are seen, so those are
    cross-attention too. A written-out attention whose query the engine cannot see (a decoder state
    passed in) is judged by the tokens its scores come from: pooling bare token embeddings is order-blind
    and reported at the lookup; over a GRU's states (the recurrence orders them) it is not."""
    assert _sc303("keys_and_queries.py") == [(78, 15)]


def test_SC303_a_finding_at_unused_positions_does_not_end_the_search() -> None:
    """``check`` and ``_unused_positions``: position embeddings looked up beside the tokens and never
    added are reported where they are computed (``CharEncoder``; also when broadcast to the batch
    first, ``CharEncoderExpanded``: still the same positions, dropped), the next model with no
    positions at all is still reported at its lookup (``BagClassifier``), and the position embeddings
    a correct model computes in its own ``forward`` (``GPT``) are never blamed for another model's
    tokens: only the runs of the function that looked those tokens up are searched. Positions given
    to another stream in that function (the source of ``Seq2Seq``, beside its target with none; a
    relative bias given to the encoder as its ``mask=``) were not dropped: the target's lookup is
    reported, not the source's positions."""
    assert _sc303("unused_positions.py") == [(39, 17), (55, 39), (64, 17), (85, 29), (101, 29)]
