import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GPT(nn.Module):
    """Token and position embeddings added: nothing to report."""

    def __init__(self, vocab=100, d=32, h=4, block=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.h = h

    def forward(self, idx):
        b, t = idx.shape
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        q, k, v = self.qkv(x).view(b, t, 3, self.h, -1).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class CharEncoder(nn.Module):
    """Position embeddings looked up beside the tokens and never added (reported there)."""

    def __init__(self, n_chars=80, width=32, context=128):
        super().__init__()
        self.chars = nn.Embedding(n_chars, width)
        self.where = nn.Embedding(context, width)
        self.register_buffer("slots", torch.arange(context).expand((1, -1)))
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, ids):
        slots = self.slots[:, : ids.size(1)]
        h = self.chars(ids)
        where = self.where(slots)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
        return att @ v


class BagClassifier(nn.Module):
    """No positions anywhere (reported at the lookup)."""

    def __init__(self, vocab=100, d=32, h=4, classes=3):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h, batch_first=True), 2)
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        return self.head(self.encoder(self.emb(ids)).mean(dim=1))


class CharEncoderExpanded(CharEncoder):
    """The same, the position embeddings broadcast to the batch before they are dropped."""

    def forward(self, ids):
        slots = self.slots[:, : ids.size(1)]
        h = self.chars(ids)
        where = self.where(slots).expand(ids.size(0), -1, -1)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)), dim=-1)
        return att @ v


class Seq2Seq(nn.Module):
    """Positions given to the source in the same forward, none to the target (reported at its lookup)."""

    def __init__(self, src_vocab=100, tgt_vocab=120, d_model=32, nhead=4, max_len=64):
        super().__init__()
        self.src_tok_emb = nn.Embedding(src_vocab, d_model)
        self.tgt_tok_emb = nn.Embedding(tgt_vocab, d_model)
        self.src_pos_emb = nn.Embedding(max_len, d_model)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, nhead, batch_first=True), 2)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d_model, nhead, batch_first=True), 2)

    def forward(self, src, tgt):
        src_pos = torch.arange(src.size(1), device=src.device)
        memory = self.encoder(self.src_tok_emb(src) + self.src_pos_emb(src_pos))
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device)
        return self.decoder(self.tgt_tok_emb(tgt), memory, tgt_mask)


class RelativeBiasSeq2Seq(Seq2Seq):
    """The source's positions a learned relative bias given to the encoder as its ``mask``."""

    def __init__(self, src_vocab=100, tgt_vocab=120, d_model=32, nhead=4, max_len=64):
        super().__init__(src_vocab, tgt_vocab, d_model, nhead, max_len)
        self.max_len = max_len
        self.relative_bias = nn.Embedding(2 * max_len - 1, 1)

    def forward(self, src, tgt):
        pos = torch.arange(src.size(1), device=src.device)
        bias = self.relative_bias(pos[None, :] - pos[:, None] + self.max_len - 1).squeeze(-1)
        memory = self.encoder(self.src_tok_emb(src), mask=bias)
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device)
        return self.decoder(self.tgt_tok_emb(tgt), memory, tgt_mask)


if __name__ == "__main__":
    ids = torch.randint(0, 80, (2, 7))
    assert GPT()(ids).shape == (2, 4, 7, 8)
    assert CharEncoder()(ids).shape == (2, 7, 32)
    assert BagClassifier()(ids).shape == (2, 3)
    assert CharEncoderExpanded()(ids).shape == (2, 7, 32)
    assert Seq2Seq()(ids, torch.randint(0, 120, (2, 9))).shape == (2, 9, 32)
    assert RelativeBiasSeq2Seq()(ids, torch.randint(0, 120, (2, 9))).shape == (2, 9, 32)
    print("ok")
