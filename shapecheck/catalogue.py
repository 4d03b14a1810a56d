"""The rule catalogue: every code and name shapecheck has promised (a copy of RULES.md, v1).

Codes and names are a public contract: users write them in ``--select``, in
``# shapecheck: ignore[...]`` and in pyproject.toml. A rule that is catalogued but not written yet
can already be named in a configuration without an error; a registered rule must appear here with
the same code and name (the test suite checks it). A catalogued code with no registered rule is
planned, not implemented: ``shapecheck explain`` says so and ``shapecheck rules`` does not list it.
"""

from __future__ import annotations

from typing import NamedTuple


class Entry(NamedTuple):
    """One catalogued rule: its code, its kebab-case name and what it flags."""

    code: str
    name: str
    description: str


#: Families: what each hundred means.
FAMILIES: dict[str, str] = {
    "SC0": "the tool itself",
    "SC1": "attention scores",
    "SC2": "masks",
    "SC3": "positional encodings",
    "SC4": "weights and module structure",
    "SC5": "reshapes and matmuls",
    "SC6": "training loops",
}

# code | name | what it flags  (kept in the same layout as RULES.md so the two diff cleanly)
_TABLE = """\
SC001  | syntax-error                   | the file does not parse; reported at the error's position, the run goes on
SC101  | missing-attention-scale        | attention scores (q @ k^T) reach softmax with no 1/sqrt(d_k) scaling
SC102  | wrong-attention-scale          | scores scaled by d_k (not its sqrt), by sqrt(d_model) in multi-head attention, or multiplied instead of divided
SC103  | softmax-wrong-dim              | softmax over attention scores on a dim other than the key dim (last)
SC104  | mask-after-softmax             | mask applied to probabilities after softmax, or masked with 0 instead of -inf / large negative before softmax
SC201  | mask-dtype                     | 0/1 float or int mask used where a bool mask is required (masked_fill, boolean attn_mask)
SC202  | mask-shape                     | mask cannot broadcast against the scores (unsliced max_len buffer, (B,T,T) mask to nn.MultiheadAttention, wrong-rank key_padding_mask)
SC203  | mask-polarity                  | inverted mask meaning: tril where triu is needed for masked_fill(mask, -inf), MHA-convention bool mask (True = blocked) given to F.scaled_dot_product_attention (True = attend) or the reverse
SC204  | missing-causal-mask            | decoder / causal-LM self-attention with no causal masking
SC205  | causal-mask-diagonal           | causal mask that also blocks the diagonal (triu with diagonal=0 as the blocked set): first row fully masked, NaN
SC301  | pe-concatenated                | positional encoding concatenated to token embeddings instead of added
SC302  | pe-not-sliced                  | whole max_len positional table added to a length-T sequence without slicing
SC303  | missing-positional-encoding    | token embeddings reach attention with no positional information at all
SC304  | sinusoidal-pe-formula          | wrong sinusoidal frequency (exponent) or sin/cos written to the same slots
SC401  | shared-qk-weights              | query and key projections are the same module or parameter
SC402  | heads-not-divisible            | d_model % n_heads != 0 for statically known values
SC403  | head-split-mismatch            | head split/merge sizes inconsistent (head dim = d_model while splitting into n_heads; view sizes whose product != numel)
SC404  | layernorm-wrong-dim            | LayerNorm normalized_shape is not the feature dim
SC405  | residual-shape-mismatch        | residual add of tensors whose feature sizes differ
SC406  | linear-chain-mismatch          | consecutive layers whose in/out features disagree
SC501  | view-non-contiguous            | .view() right after transpose/permute without .contiguous()
SC502  | heads-merged-without-transpose | (b,h,t,d) reshaped to (b,t,h*d) without moving h next to d first
SC503  | heads-split-without-transpose  | (b,t,d_model) viewed directly as (b,h,t,d_k)
SC504  | wrong-key-transpose            | keys transposed with .T / .t() or over batch/head axes instead of the last two
SC505  | matmul-shape-mismatch          | inferred inner dims of a matmul / linear disagree
SC506  | annotation-mismatch            | inferred shape contradicts a jaxtyping annotation
SC507  | batch-first-mismatch           | batch-first (b, t, d) tensors given to nn.MultiheadAttention / nn.Transformer* layers built without batch_first=True
SC601  | missing-train-eval-mode        | training loop that never calls model.train(), or evaluation with no model.eval(), for models with dropout
SC602  | cross-entropy-shape            | cross_entropy on (B,T,V) logits without flattening or moving the class dim
SC603  | lm-targets-not-shifted         | language-model targets equal the inputs (no next-token shift)
"""


def _parse(table: str) -> tuple[Entry, ...]:
    entries = []
    for line in table.splitlines():
        code, name, description = (part.strip() for part in line.split("|", 2))
        entries.append(Entry(code, name, description))
    return tuple(entries)


CATALOGUE: tuple[Entry, ...] = _parse(_TABLE)
BY_CODE: dict[str, Entry] = {entry.code: entry for entry in CATALOGUE}
BY_NAME: dict[str, Entry] = {entry.name: entry for entry in CATALOGUE}
