'''SC603 lm-targets-not-shifted: rule examples.

Marker (``# <-``): the target window cut at the same position as the input (``data[i:i+T]`` twice,
``ids[:, :-1]`` against ``logits[:, :-1]``), or, when the targets are the very tensor given to a
causal model, the target argument of the loss.
'''

INVALID = [
    ("seed: y cut from the same window as x", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniGPT(nn.Module):
    def __init__(self, vocab_size, d_model=64, max_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        return self.head(self.token_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))


text = "To be, or not to be, that is the question." * 100
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
model = MiniGPT(vocab_size=len(chars))
optim = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(500):
    ix = torch.randint(0, len(data) - 32, (4,))
    x = torch.stack([data[i:i + 16] for i in ix])
    y = torch.stack([data[i:i + 16] for i in ix])  # <-
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
    optim.zero_grad(); loss.backward(); optim.step()
"""),
    ("nanoGPT: get_batch(split) returns the same window twice", """\
import torch
import torch.nn as nn
from torch.nn import functional as F

batch_size, block_size, vocab_size, n_embd = 16, 32, 65, 64
data = torch.randint(vocab_size, (10000,))
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i:i + block_size] for i in ix])  # <-
    return x, y


class BigramLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.lm_head(self.token_embedding_table(idx))
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        return logits, F.cross_entropy(logits.view(B * T, C), targets.view(B * T))


model = BigramLanguageModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for it in range(100):
    xb, yb = get_batch("train")
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
"""),
    ("Hugging Face style: labels=input_ids into a model that does not shift", """\
import torch
import torch.nn.functional as F
from torch import nn


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=32, n_positions=64):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, hidden_size)
        self.wpe = nn.Embedding(n_positions, hidden_size)
        self.q = nn.Linear(hidden_size, hidden_size)
        self.k = nn.Linear(hidden_size, hidden_size)
        self.v = nn.Linear(hidden_size, hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids, labels=None):
        h = self.wte(input_ids) + self.wpe(torch.arange(input_ids.shape[1]))
        a = F.scaled_dot_product_attention(self.q(h), self.k(h), self.v(h), is_causal=True)
        logits = self.lm_head(h + a)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1))  # <-
        return loss, logits


model = TinyCausalLM()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
input_ids = torch.randint(0, 100, (2, 12))
loss, logits = model(input_ids, labels=input_ids)
loss.backward()
"""),
    ("einops: logits[:, :-1] scored against ids[:, :-1]", """\
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, num_tokens=50, dim=32):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x):
        return self.to_logits(self.emb(x))


model = TinyLM()
ids = torch.randint(0, 50, (4, 17))
logits = model(ids)
loss = F.cross_entropy(
    rearrange(logits[:, :-1], "b n c -> (b n) c"),
    rearrange(ids[:, :-1], "b n -> (b n)"),  # <-
)
loss.backward()
"""),
    ("functional: a loss helper scores a causal model against its own input ids", """\
import torch
import torch.nn.functional as F
from torch import nn


class CausalLM(nn.Module):
    def __init__(self, vocab=40, d=16, max_len=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.proj = nn.Linear(d, 2 * d)
        self.out = nn.Linear(d, vocab)
        self.register_buffer("mask", torch.triu(torch.ones(max_len, max_len), diagonal=1).bool())

    def forward(self, ids):
        T = ids.shape[1]
        h = self.emb(ids) + self.pos(torch.arange(T))
        q, k = self.proj(h).chunk(2, dim=-1)
        scores = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(self.mask[:T, :T], float("-inf"))
        return self.out(scores.softmax(dim=-1) @ h)


def lm_loss(model, ids):
    logits = model(ids)
    return F.cross_entropy(logits.flatten(0, 1), ids.flatten())  # <-


model = CausalLM()
opt = torch.optim.AdamW(model.parameters())
for step in range(10):
    ids = torch.randint(0, 40, (8, 32))
    loss = lm_loss(model, ids)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""),
    ("plain training script: inputs and targets both batch[:, :-1]", """\
import torch
import torch.nn as nn


class TokenModel(nn.Module):
    def __init__(self, vocab=40, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.out(self.emb(ids))


model = TokenModel()
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    batch = torch.randint(0, 40, (8, 33))
    inputs = batch[:, :-1]
    targets = batch[:, :-1]  # <-
    loss = criterion(model(inputs).reshape(-1, 40), targets.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
"""),
]

VALID = [
    ("seed 2 repaired: y = data[i + 1 : i + 17]", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniGPT(nn.Module):
    def __init__(self, vocab_size, d_model=64, max_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        return self.head(self.token_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))


text = "To be, or not to be, that is the question." * 100
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
model = MiniGPT(vocab_size=len(chars))
for step in range(500):
    ix = torch.randint(0, len(data) - 32, (4,))
    x = torch.stack([data[i:i + 16] for i in ix])
    y = torch.stack([data[i + 1:i + 17] for i in ix])
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
    loss.backward()
"""),
    ("nanoGPT / reference: windows from starts.tolist(), targets one character on", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def get_batch(data, batch_size, block_size):
    starts = torch.randint(0, len(data) - block_size, (batch_size,))
    x = torch.stack([data[i : i + block_size] for i in starts.tolist()])
    y = torch.stack([data[i + 1 : i + 1 + block_size] for i in starts.tolist()])
    return x, y


class GPT(nn.Module):
    def __init__(self, vocab_size=65, n_embd=32):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx):
        return self.lm_head(self.wte(idx))


data = torch.randint(0, 65, (5000,))
model = GPT()
for step in range(10):
    x, y = get_batch(data, 4, 16)
    logits = model(x)
    b, t, vocab_size = logits.shape
    loss = F.cross_entropy(logits.view(b * t, vocab_size), y.view(b * t))
    loss.backward()
"""),
    ("Hugging Face style: labels=input_ids, the model shifts inside", """\
import torch
import torch.nn.functional as F
from torch import nn


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=32):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, hidden_size)
        self.wpe = nn.Embedding(128, hidden_size)
        self.q = nn.Linear(hidden_size, hidden_size)
        self.k = nn.Linear(hidden_size, hidden_size)
        self.v = nn.Linear(hidden_size, hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids, labels=None):
        h = self.wte(input_ids) + self.wpe(torch.arange(input_ids.shape[1]))
        a = F.scaled_dot_product_attention(self.q(h), self.k(h), self.v(h), is_causal=True)
        logits = self.lm_head(h + a)
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss = F.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return loss, logits


model = TinyCausalLM()
input_ids = torch.randint(0, 100, (2, 12))
loss, logits = model(input_ids, labels=input_ids)
loss.backward()
"""),
    ("einops: logits[:, :-1] against ids[:, 1:]", """\
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, num_tokens=50, dim=32):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.to_logits = nn.Linear(dim, num_tokens)

    def forward(self, x):
        return self.to_logits(self.emb(x))


model = TinyLM()
ids = torch.randint(0, 50, (4, 17))
logits = model(ids)
loss = F.cross_entropy(rearrange(logits[:, :-1], "b n c -> (b n) c"), rearrange(ids[:, 1:], "b n -> (b n)"))
loss.backward()
"""),
    ("functional: masked-language-model targets are the unmasked ids (not causal)", """\
import torch
import torch.nn.functional as F
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab=40, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.out(self.emb(ids))


def mlm_step(model, ids, mask_id=3):
    masked = ids.clone()
    chosen = torch.rand(ids.shape) < 0.15
    masked[chosen] = mask_id
    logits = model(masked)
    return F.cross_entropy(logits.view(-1, 40), ids.view(-1))


def autoencoder_step(model, ids):
    return F.cross_entropy(model(ids).flatten(0, 1), ids.flatten())


model = Encoder()
ids = torch.randint(0, 40, (8, 32))
mlm_step(model, ids).backward()
autoencoder_step(model, ids).backward()
"""),
    ("plain training script: inputs batch[:, :-1], targets batch[:, 1:]", """\
import torch
import torch.nn as nn


class TokenModel(nn.Module):
    def __init__(self, vocab=40, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.out(self.emb(ids))


model = TokenModel()
criterion = nn.CrossEntropyLoss()
for step in range(10):
    batch = torch.randint(0, 40, (8, 33))
    inputs, targets = batch[:, :-1], batch[:, 1:]
    loss = criterion(model(inputs).reshape(-1, 40), targets.reshape(-1))
    loss.backward()
"""),
]

VALID += [
    ("seq2seq: decoder inputs shifted right by writing into a new tensor, targets rolled", """\
import torch
import torch.nn.functional as F
from torch import nn


class TinySeq2Seq(nn.Module):
    def __init__(self, vocab=30, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(64, d)
        self.out = nn.Linear(d, vocab)
        self.register_buffer("causal", torch.triu(torch.ones(64, 64), diagonal=1).bool())

    def forward(self, decoder_input_ids):
        T = decoder_input_ids.shape[1]
        h = self.emb(decoder_input_ids) + self.pos(torch.arange(T))
        scores = (h @ h.transpose(-2, -1) * h.shape[-1] ** -0.5).masked_fill(self.causal[:T, :T], float("-inf"))
        return self.out(scores.softmax(dim=-1) @ h)


def shift_right(labels, start_id=0):
    shifted = labels.new_zeros(labels.shape)
    shifted[:, 1:] = labels[:, :-1].clone()
    shifted[:, 0] = start_id
    return shifted


model = TinySeq2Seq()
labels = torch.randint(0, 30, (4, 12))
logits = model(shift_right(labels))
loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten())
rolled = F.cross_entropy(model(labels).flatten(0, 1), torch.roll(labels, -1, dims=1).flatten())
"""),
]
