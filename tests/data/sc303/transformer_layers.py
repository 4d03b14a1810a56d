import math

import torch
import torch.nn as nn


def alibi(t, device=None):
    """A distance bias (one slope): -|i - j|, added to the scores as a float mask."""
    pos = torch.arange(t, device=device)
    return -(pos[None, :] - pos[:, None]).abs().float()


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=512):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class EncoderStack(nn.Module):
    def __init__(self, vocab=100, d_model=32, nhead=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, nhead, batch_first=True), 2)

    def forward(self, ids):
        x = self.tok(ids)
        return self.encoder(x, mask=alibi(ids.size(1), ids.device))


class EncoderStackByPosition(EncoderStack):
    def forward(self, ids):
        x = self.tok(ids)
        return self.encoder(x, alibi(ids.size(1), ids.device))


class EncoderStackBySrcKeyword(EncoderStack):
    def forward(self, ids):
        x = self.tok(ids)
        return self.encoder(src=x)


class EncoderLayer(nn.Module):
    def __init__(self, vocab=100, d_model=32, nhead=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, batch_first=True)

    def forward(self, ids):
        x = self.tok(ids)
        return self.layer(x, src_mask=alibi(ids.size(1), ids.device))


class EncoderLayerByPosition(EncoderLayer):
    def forward(self, ids):
        x = self.tok(ids)
        return self.layer(x, alibi(ids.size(1), ids.device))


class EncoderLayerBySrcKeyword(EncoderLayer):
    def forward(self, ids):
        x = self.tok(ids)
        return self.layer(src=x, src_mask=None)


class DecoderStack(nn.Module):
    def __init__(self, vocab=100, d_model=32, nhead=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d_model, nhead, batch_first=True), 2)

    def forward(self, ids, memory):
        x = self.tok(ids)
        return self.decoder(x, memory, tgt_mask=alibi(ids.size(1), ids.device))


class DecoderStackByPosition(DecoderStack):
    def forward(self, ids, memory):
        x = self.tok(ids)
        return self.decoder(x, memory, alibi(ids.size(1), ids.device))


class DecoderStackByTgtKeyword(DecoderStack):
    def forward(self, ids, memory):
        x = self.tok(ids)
        return self.decoder(tgt=x, memory=memory)


class DecoderLayer(nn.Module):
    def __init__(self, vocab=100, d_model=32, nhead=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.layer = nn.TransformerDecoderLayer(d_model, nhead, batch_first=True)

    def forward(self, ids, memory):
        x = self.tok(ids)
        return self.layer(x, memory, tgt_mask=alibi(ids.size(1), ids.device))


class DecoderLayerByPosition(DecoderLayer):
    def forward(self, ids, memory):
        x = self.tok(ids)
        return self.layer(x, memory, alibi(ids.size(1), ids.device))


class DecoderLayerByTgtKeyword(DecoderLayer):
    def forward(self, ids, memory):
        x = self.tok(ids)
        return self.layer(tgt=x, memory=memory)


class Seq2SeqTransformer(nn.Module):
    """The tutorial's translation model with the positional encoding of the target left out: the
    source's positions reach the decoder only through cross-attention (its memory)."""

    def __init__(self, src_vocab=100, tgt_vocab=120, d_model=32, nhead=4):
        super().__init__()
        self.src_tok_emb = nn.Embedding(src_vocab, d_model)
        self.tgt_tok_emb = nn.Embedding(tgt_vocab, d_model)
        self.positional_encoding = PositionalEncoding(d_model)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model, nhead, batch_first=True), 2)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(d_model, nhead, batch_first=True), 2)
        self.generator = nn.Linear(d_model, tgt_vocab)

    def forward(self, src, tgt):
        memory = self.encoder(self.positional_encoding(self.src_tok_emb(src)))
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), device=tgt.device)
        outs = self.decoder(self.tgt_tok_emb(tgt), memory, tgt_mask)
        return self.generator(outs)


class AlibiMultiheadAttention(nn.Module):
    def __init__(self, vocab=100, d_model=32, nhead=4):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, ids):
        x = self.tok(ids)
        return self.attn(x, x, x, attn_mask=alibi(ids.size(1), ids.device), need_weights=False)[0]


class AlibiMultiheadAttentionByPosition(AlibiMultiheadAttention):
    def forward(self, ids):
        x = self.tok(ids)
        return self.attn(x, x, x, None, False, alibi(ids.size(1), ids.device))[0]


class EncoderLayerUnmasked(EncoderLayer):
    def forward(self, ids):
        return self.layer(self.tok(ids))


class DecoderLayerUnmasked(DecoderLayer):
    def forward(self, ids, memory):
        return self.layer(self.tok(ids), memory)


if __name__ == "__main__":
    ids, memory = torch.randint(0, 100, (2, 7)), torch.randn(2, 5, 32)
    for model in (EncoderStack, EncoderStackByPosition, EncoderStackBySrcKeyword, EncoderLayer,
                  EncoderLayerByPosition, EncoderLayerBySrcKeyword, AlibiMultiheadAttention,
                  AlibiMultiheadAttentionByPosition, EncoderLayerUnmasked):
        assert model()(ids).shape == (2, 7, 32), model
    for model in (DecoderStack, DecoderStackByPosition, DecoderStackByTgtKeyword, DecoderLayer,
                  DecoderLayerByPosition, DecoderLayerByTgtKeyword, DecoderLayerUnmasked):
        assert model()(ids, memory).shape == (2, 7, 32), model
    assert Seq2SeqTransformer()(torch.randint(0, 100, (2, 5)), torch.randint(0, 120, (2, 7))).shape == (2, 7, 120)
    print("ok")
