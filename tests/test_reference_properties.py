"""Properties of attention and the seeds' worked examples, computed (never copied) and checked.

Dims: b batch, h heads, t time, d_model width, d_k head width.
"""

import math

import pytest

torch = pytest.importorskip("torch")

from reference_model import (  # noqa: E402
    MiniBERT,
    MiniGPT,
    Transformer,
    MultiHeadAttention,
    SinusoidalPositionalEncoding,
    scaled_dot_product_attention,
)


@pytest.fixture(autouse=True)
def _single_thread_and_seed():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    yield
    torch.set_num_threads(threads)


def softmax_rows(scores: list[list[float]]) -> list[list[float]]:
    """Row softmax in plain Python: an independent check on the torch code."""
    rows = []
    for row in scores:
        exps = [math.exp(s) for s in row]
        rows.append([e / sum(exps) for e in exps])
    return rows


def scaled_scores(q: list[list[float]], k: list[list[float]]) -> list[list[float]]:
    d_k = len(q[0])
    return [[sum(a * b for a, b in zip(qi, kj)) / math.sqrt(d_k) for kj in k] for qi in q]


# --- the seeds' worked examples ----------------------------------------------------------------


def test_seed1_three_token_example():
    """First seed, section 3.3: three tokens, d_k = 2.

    Q K^T = [[0.11, 0.23, 0.35], [0.39, 0.83, 1.27], [0.67, 1.43, 2.19]] and the scaled scores the
    seed prints are right. Its softmax rows are right to about 1e-3 but two entries are rounded the
    wrong way (it carried 3-digit intermediates): row 1 is [0.2365, 0.3228, 0.4407] (seed: 0.440)
    and row 2 is [0.1773, 0.3034, 0.5193] (seed: 0.520). Its reading is also backwards: token 0
    attends *least* to itself (0.3055) and most to token 2 (0.3620).
    """
    q = [[0.1, 0.2], [0.5, 0.6], [0.9, 1.0]]
    k = [[0.3, 0.4], [0.7, 0.8], [1.1, 1.2]]
    v = torch.eye(3)  # out = weights, so the output shows the weights too
    qt, kt = torch.tensor(q), torch.tensor(k)
    out, weights = scaled_dot_product_attention(qt, kt, v)

    assert torch.allclose(qt @ kt.T, torch.tensor([[0.11, 0.23, 0.35], [0.39, 0.83, 1.27], [0.67, 1.43, 2.19]]))
    expected = torch.tensor(softmax_rows(scaled_scores(q, k)))
    torch.testing.assert_close(weights, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=0)
    rounded = torch.tensor([[0.3055, 0.3325, 0.3620], [0.2365, 0.3228, 0.4407], [0.1773, 0.3034, 0.5193]])
    torch.testing.assert_close(weights, rounded, atol=1e-4, rtol=0)
    assert weights[0].argmin() == 0 and weights[0].argmax() == 2


def test_seed2_the_cat_sat_down_example():
    """Second seed, section 1.5: "The cat sat down", d_k = 2.

    Q K^T = [[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 2, 0], [0, 0, 0, 0]] is right, but the softmax
    matrix the seed prints ([[0.21, 0.34, 0.34, 0.13], ..., [0.22, 0.22, 0.43, 0.13], ...]) is
    wrong. Equal scores must get equal weights, and row 0 scores "The" and "down" both 0. The
    correct matrix, softmax(Q K^T / sqrt(2)) by rows, is

        [[0.1651, 0.3349, 0.3349, 0.1651],
         [0.3349, 0.1651, 0.3349, 0.1651],
         [0.2212, 0.2212, 0.4486, 0.1091],
         [0.2500, 0.2500, 0.2500, 0.2500]]

    (0.1651 = 1 / (2 + 2 e^(1/sqrt 2)), 0.4486 = e^(sqrt 2) / (2 e^(1/sqrt 2) + e^(sqrt 2) + 1)).
    So "sat" does not split its attention 1/3 each over The / cat / sat as the seed says: it gives
    itself 0.4486, The and cat 0.2212 each and down 0.1091. Only the uniform last row is right.
    """
    q = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    k = [[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    _, weights = scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.eye(4))

    qt, kt = torch.tensor(q), torch.tensor(k)
    assert torch.equal(qt @ kt.T, torch.tensor([[0.0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 2, 0], [0, 0, 0, 0]]))
    torch.testing.assert_close(weights, torch.tensor(softmax_rows(scaled_scores(q, k))), atol=1e-6, rtol=0)
    a = 1 / (2 + 2 * math.exp(1 / math.sqrt(2)))
    sat = math.exp(math.sqrt(2)) / (2 * math.exp(1 / math.sqrt(2)) + math.exp(math.sqrt(2)) + 1)
    assert weights[0, 0].item() == pytest.approx(a, abs=1e-6) and weights[0, 3].item() == pytest.approx(a, abs=1e-6)
    assert weights[2, 2].item() == pytest.approx(sat, abs=1e-6)
    correct = torch.tensor(
        [
            [0.1651, 0.3349, 0.3349, 0.1651],
            [0.3349, 0.1651, 0.3349, 0.1651],
            [0.2212, 0.2212, 0.4486, 0.1091],
            [0.2500, 0.2500, 0.2500, 0.2500],
        ]
    )
    torch.testing.assert_close(weights, correct, atol=1e-4, rtol=0)
    printed_in_seed = torch.tensor(
        [[0.21, 0.34, 0.34, 0.13], [0.34, 0.21, 0.34, 0.13], [0.22, 0.22, 0.43, 0.13], [0.25, 0.25, 0.25, 0.25]]
    )
    assert (weights[:3] - printed_in_seed[:3]).abs().max() > 0.04  # the seed's rows 0-2 are wrong


def test_dk64_variance_experiment():
    """Second seed, section 1.4: q, k ~ N(0, 1) with d_k = 64 give q.k std ~ sqrt(64) = 8.

    Scaled by 1/sqrt(d_k) the std is ~1. Unscaled, softmax over 5 keys is nearly one-hot (mean max
    weight ~0.90); scaled it is not (~0.46).
    """
    d_k, n, t = 64, 10_000, 5
    generator = torch.Generator().manual_seed(0)
    q = torch.randn(n, t, d_k, generator=generator)
    k = torch.randn(n, t, d_k, generator=generator)
    scores = q @ k.transpose(-2, -1)  # (n, t, t)
    scaled = scores / math.sqrt(d_k)
    assert scores.std().item() == pytest.approx(8.0, rel=0.02)
    assert scaled.std().item() == pytest.approx(1.0, rel=0.02)
    assert scores.softmax(-1).amax(-1).mean().item() > 0.85
    assert scaled.softmax(-1).amax(-1).mean().item() < 0.55


# --- properties ----------------------------------------------------------------------------------


def test_attention_rows_sum_to_one_with_and_without_mask():
    mha = MultiHeadAttention(d_model=32, n_heads=4).eval()
    x = torch.randn(3, 6, 32)
    mask = torch.rand(6, 6) < 0.5
    mask.fill_diagonal_(False)  # every query keeps at least itself
    for m in (None, mask):
        _, weights = mha(x, x, x, m)  # (b, h, t_q, t_k)
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 4, 6), atol=1e-6, rtol=0)
    assert bool((weights.masked_select(mask.expand_as(weights)) == 0).all())


def test_self_attention_without_pe_is_permutation_equivariant():
    """Seed 2, section 3.1: shuffle the tokens and the outputs are shuffled the same way."""
    mha = MultiHeadAttention(d_model=32, n_heads=4).eval()
    x = torch.randn(2, 6, 32)
    perm = torch.randperm(6)
    out, _ = mha(x, x, x)
    out_perm, _ = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=0)


def test_self_attention_with_pe_is_not_permutation_equivariant():
    """...and with positional encodings added, order matters ("I love you" != "you love I")."""
    mha = MultiHeadAttention(d_model=32, n_heads=4).eval()
    pe = SinusoidalPositionalEncoding(d_model=32, max_len=16)
    x = torch.randn(2, 6, 32)
    perm = torch.tensor([5, 4, 3, 2, 1, 0])
    out, _ = mha(pe(x), pe(x), pe(x))
    shuffled = pe(x[:, perm])
    out_perm, _ = mha(shuffled, shuffled, shuffled)
    assert (out_perm - out[:, perm]).abs().max() > 1e-2


def test_causal_model_output_at_t_ignores_later_tokens():
    model = MiniGPT(vocab_size=20, d_model=32, n_heads=4, n_layers=2, max_len=12).eval()
    idx = torch.randint(0, 20, (2, 12))
    changed = idx.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % 20  # rewrite the future from position 7 on
    logits, logits_changed = model(idx), model(changed)
    torch.testing.assert_close(logits_changed[:, :7], logits[:, :7], atol=1e-6, rtol=0)
    assert (logits_changed[:, 7:] - logits[:, 7:]).abs().max() > 1e-3


def test_fully_masked_row_is_nan_like_torch():
    q = k = v = torch.randn(1, 2, 3)
    mask = torch.tensor([[True, True], [False, True]])  # (t_q, t_k): query 0 sees nothing
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.isnan(weights[0, 0]).all() and not torch.isnan(weights[0, 1]).any()


def test_attention_dropout_only_in_training_mode():
    mha = MultiHeadAttention(d_model=32, n_heads=4, dropout=0.5)
    x = torch.randn(2, 6, 32)
    mha.train()
    assert not torch.allclose(mha(x, x, x)[0], mha(x, x, x)[0])  # dropped weights differ per call
    mha.eval()
    torch.testing.assert_close(mha(x, x, x)[0], mha(x, x, x)[0], atol=0, rtol=0)


def test_transformer_is_causal_in_the_target_and_ignores_source_padding():
    model = Transformer(src_vocab_size=30, tgt_vocab_size=20, d_model=32, n_heads=4, n_layers=2, d_ff=64, max_len=16)
    model.eval()
    src, tgt = torch.randint(1, 30, (2, 7)), torch.randint(0, 20, (2, 6))
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[0, -3:] = True  # the first source sentence has 3 padding tokens
    logits = model(src, tgt, padding)
    later = tgt.clone()
    later[:, 4:] = (later[:, 4:] + 1) % 20
    torch.testing.assert_close(model(src, later, padding)[:, :4], logits[:, :4], atol=1e-6, rtol=0)
    other_padding = src.clone()
    other_padding[0, -3:] = 0  # whatever sits under the padding mask is never attended to
    torch.testing.assert_close(model(other_padding, tgt, padding), logits, atol=1e-6, rtol=0)


def test_bert_sees_both_directions_but_not_padding():
    model = MiniBERT(vocab_size=50, d_model=32, n_heads=4, n_layers=2, max_len=16).eval()
    ids = torch.randint(1, 50, (2, 8))
    padding = torch.zeros(2, 8, dtype=torch.bool)
    padding[1, -2:] = True
    logits = model(ids, padding)
    later = ids.clone()
    later[:, 6] = (later[:, 6] + 1) % 50
    assert (model(later, padding)[:, :6] - logits[:, :6]).abs().max() > 1e-4  # bidirectional
    changed_padding = ids.clone()
    changed_padding[1, -2:] = 0
    torch.testing.assert_close(model(changed_padding, padding)[1, :6], logits[1, :6], atol=1e-6, rtol=0)
