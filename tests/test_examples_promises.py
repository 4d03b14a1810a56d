"""What the README promises about the shipped examples, file by file.

Every file in examples/bugs/ marks its bug with ``# BUG: SCnnn`` and gets exactly that finding, on
that line, and nothing else; examples/clean/, examples/reference/ and reference_model/ get none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO, lint_shipped_file

#: One xdist worker runs this module with test_bug_examples.py: they share the
#: per-process ``lint_shipped_file`` results instead of each worker linting every example again.
pytestmark = pytest.mark.xdist_group("shipped-examples")

BUG_MARK = re.compile(r"#\s*BUG:\s*(SC\d{3})\b")
BUGS = sorted((REPO / "examples" / "bugs").glob("*.py"))
CLEAN = sorted(
    [*(REPO / "examples" / "clean").glob("*.py"), *(REPO / "examples" / "reference").glob("*.py"),
     *(REPO / "reference_model").glob("*.py")]
)


def _findings(path: Path) -> list[tuple[int, str]]:
    result = lint_shipped_file(path)
    assert result.error is None, result.error
    return sorted((d.span.line, d.code) for d in result.diagnostics)


def _marked(path: Path) -> list[tuple[int, str]]:
    return [
        (number, match.group(1))
        for number, text in enumerate(path.read_text().splitlines(), 1)
        if (match := BUG_MARK.search(text))
    ]


def test_the_example_folders_are_there() -> None:
    assert len(BUGS) >= 20 and len(CLEAN) >= 10


@pytest.mark.parametrize("path", BUGS, ids=lambda path: path.stem)
def test_bug_example_gets_exactly_its_finding(path: Path) -> None:
    marked = _marked(path)
    assert len(marked) == 1, f"{path.name} must mark exactly one line with '# BUG: SCnnn', found {marked}"
    assert path.name.startswith(marked[0][1].lower()), f"{path.name} marks {marked[0][1]}"
    assert _findings(path) == marked


@pytest.mark.parametrize("path", CLEAN, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_clean_code_gets_no_finding(path: Path) -> None:
    assert _findings(path) == []


#: What each bug example's message must tell the user (the facts, not the whole wording).
MESSAGE_FACTS = {
    "sc101_missing_scale": ["(2, 8, 16, 16)", "unscaled", "sqrt(64) = 8"],
    "sc102_wrong_scale": ["0.0625 = 1/sqrt(256), the model width", "d_k = 16"],
    "sc103_softmax_wrong_dim": ["(2, 4, 7, 7)", "with dim=-2", "is dim=-1"],
    "sc104_mask_after_softmax": ["after softmax"],
    "sc201_mask_dtype": ["bool mask", "float"],
    "sc202_mask_shape": ["3-D attn_mask", "batch * num_heads = 12"],
    "sc203_mask_polarity": ["True = attend", "True on the future"],
    "sc204_missing_causal_mask": ["feeds tokens sampled one at a time"],
    "sc205_causal_mask_diagonal": ["blocks the diagonal"],
    "sc301_pe_concatenated": ["concatenated"],
    "sc302_pe_not_sliced": ["length 512", "length 5"],
    "sc303_missing_positional_encoding": ["without any positional encoding"],
    "sc304_sinusoidal_pe_formula": ["grow with the feature index"],
    "sc401_shared_qk_weights": ["both computed by self.W_Q"],
    "sc402_heads_not_divisible": ["512 is not divisible by 6 (512 % 6 = 2)"],
    "sc403_head_split_mismatch": ["(2, 8, 64) (numel 1024)", "(2, 8, 4, 64) (numel 4096)"],
    "sc404_layernorm_wrong_dim": ["normalized_shape (128,)", "feature dim 64"],
    "sc405_residual_shape_mismatch": ["(2, 50, 80) and (2, 50, 64)", "80 vs 64"],
    "sc406_linear_chain_mismatch": ["expects 512 input features", "(1, 5, 2048)"],
    "sc501_view_non_contiguous": ["merges axes", "not contiguous"],
    "sc502_heads_merged_without_transpose": ["heads=4", "(1, 8, 64)"],
    "sc503_heads_split_without_transpose": ["(bsz, 4, q_len, 16)", "then transpose(1, 2)"],
    "sc504_wrong_key_transpose": ["contracts 4 instead of the key's feature dim"],
    "sc505_matmul_shape_mismatch": ["inner dims 512 and 768 differ"],
    "sc506_annotation_mismatch": ["(b, 4, t, t)", "(b, t, 64)", "rank 4 vs 3"],
    "sc507_batch_first_mismatch": ["without batch_first=True", "key_padding_mask (2, 16)"],
    "sc601_missing_train_eval_mode": ["trains here in eval mode", "nn.Dropout"],
    "sc602_cross_entropy_shape": ["logits (4, 8, 65) with targets (4, 8)", "flattened (4*8, 65)"],
    "sc603_lm_targets_not_shifted": ["the model's own input tokens", "shifted by one position"],
}


def test_every_bug_example_has_its_message_facts() -> None:
    assert sorted(MESSAGE_FACTS) == [path.stem for path in BUGS]


@pytest.mark.parametrize("path", BUGS, ids=lambda path: f"{path.stem}-message")
def test_bug_message_tells_the_facts(path: Path) -> None:
    (message,) = [d.message for d in lint_shipped_file(path).diagnostics]
    for fact in MESSAGE_FACTS[path.stem]:
        assert fact in message, message
