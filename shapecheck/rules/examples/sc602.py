'''SC602 cross-entropy-shape: rule examples.

Marker (``# <-``): the ``cross_entropy`` / ``nll_loss`` / ``CrossEntropyLoss`` call whose logits and
targets do not fit: classes on the last dim of (B, T, V) logits, targets of the wrong rank, or batch
or position dims that differ.
'''

INVALID = [
    ("seed: (B, T, V) logits with flattened targets y.view(-1)", """\
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


data = torch.randint(0, 14, (4200,))
model = MiniGPT(vocab_size=14)
optim = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(500):
    ix = torch.randint(0, len(data) - 32, (4,))
    x = torch.stack([data[i:i + 16] for i in ix])
    y = torch.stack([data[i + 1:i + 17] for i in ix])
    logits = model(x)
    loss = F.cross_entropy(logits, y.view(-1))  # <-
    optim.zero_grad(); loss.backward(); optim.step()
"""),
    ("nanoGPT: logits flattened to (B*T, C), targets left (B, T)", """\
import torch
import torch.nn as nn
from torch.nn import functional as F

vocab_size, n_embd, block_size = 65, 64, 32


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
        logits = logits.view(B * T, C)
        loss = F.cross_entropy(logits, targets)  # <-
        return logits, loss


model = BigramLanguageModel()
xb = torch.randint(vocab_size, (16, block_size))
yb = torch.randint(vocab_size, (16, block_size))
logits, loss = model(xb, yb)
"""),
    ("Hugging Face style: CrossEntropyLoss on shifted (B, T-1, V) logits without view", """\
import torch
from torch import nn
from torch.nn import CrossEntropyLoss


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=32):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids, labels=None):
        logits = self.lm_head(self.embed_tokens(input_ids))
        loss = None
        if labels is not None:
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss_fct = CrossEntropyLoss()
            loss = loss_fct(shift_logits, shift_labels)  # <-
        return loss, logits


model = TinyCausalLM()
input_ids = torch.randint(0, 100, (2, 12))
loss, logits = model(input_ids, labels=input_ids)
"""),
    ("einops: logits rearranged to ((b n), c), targets still (b, n)", """\
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
seq = torch.randint(0, 50, (4, 17))
inp, target = seq[:, :-1], seq[:, 1:]
logits = model(inp)
loss = F.cross_entropy(rearrange(logits, "b n c -> (b n) c"), target)  # <-
"""),
    ("functional: nll_loss on (B, T, V) log-probabilities with (B, T) targets", """\
import torch
import torch.nn.functional as F


def lm_loss(embedding, w_out, ids):
    hidden = F.embedding(ids[:, :-1], embedding)  # (B, T, D)
    log_probs = F.log_softmax(hidden @ w_out, dim=-1)  # (B, T, V)
    return F.nll_loss(log_probs, ids[:, 1:])  # <-


embedding = torch.randn(30, 16, requires_grad=True)
w_out = torch.randn(16, 30, requires_grad=True)
ids = torch.randint(0, 30, (8, 21))
lm_loss(embedding, w_out, ids).backward()
"""),
    ("plain training script: targets flattened from the unsliced batch (off by one position)", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class TokenModel(nn.Module):
    def __init__(self, vocab=40, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.out(self.emb(ids))


model = TokenModel()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    batch = torch.randint(0, 40, (8, 33))
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, 40), batch.reshape(-1))  # <-
    opt.zero_grad()
    loss.backward()
    opt.step()
"""),
]

VALID = [
    ("seed 2: logits.view(-1, V) with y.view(-1)", """\
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


data = torch.randint(0, 14, (4200,))
model = MiniGPT(vocab_size=14)
for step in range(500):
    ix = torch.randint(0, len(data) - 32, (4,))
    x = torch.stack([data[i:i + 16] for i in ix])
    y = torch.stack([data[i + 1:i + 17] for i in ix])
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, 14), y.view(-1))
"""),
    ("nanoGPT: logits.view(B*T, C) and targets.view(B*T)", """\
import torch
import torch.nn as nn
from torch.nn import functional as F

vocab_size, n_embd, block_size = 65, 64, 32


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
        logits = logits.view(B * T, C)
        targets = targets.view(B * T)
        return logits, F.cross_entropy(logits, targets)


model = BigramLanguageModel()
xb = torch.randint(vocab_size, (16, block_size))
yb = torch.randint(vocab_size, (16, block_size))
logits, loss = model(xb, yb)
"""),
    ("Hugging Face style: shifted logits and labels flattened with view", """\
import torch
from torch import nn
from torch.nn import CrossEntropyLoss


class TinyCausalLM(nn.Module):
    def __init__(self, vocab_size=100, hidden_size=32):
        super().__init__()
        self.vocab_size = vocab_size
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, input_ids, labels=None):
        logits = self.lm_head(self.embed_tokens(input_ids))
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        loss = CrossEntropyLoss()(shift_logits.view(-1, self.vocab_size), shift_labels.view(-1))
        return loss, logits


model = TinyCausalLM()
input_ids = torch.randint(0, 100, (2, 12))
loss, logits = model(input_ids, labels=input_ids)
"""),
    ("einops: classes moved to dim 1 with 'b n c -> b c n'", """\
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
seq = torch.randint(0, 50, (4, 17))
inp, target = seq[:, :-1], seq[:, 1:]
logits = model(inp)
loss = F.cross_entropy(rearrange(logits, "b n c -> b c n"), target)
loss_flat = F.cross_entropy(rearrange(logits, "b n c -> (b n) c"), rearrange(target, "b n -> (b n)"))
"""),
    ("functional: log-probs transposed to (B, V, T) for nll_loss, soft targets of the logits' shape", """\
import torch
import torch.nn.functional as F


def lm_loss(embedding, w_out, ids):
    hidden = F.embedding(ids[:, :-1], embedding)  # (B, T, D)
    log_probs = F.log_softmax(hidden @ w_out, dim=-1)  # (B, T, V)
    return F.nll_loss(log_probs.transpose(1, 2), ids[:, 1:])


def distill_loss(student_logits, teacher_logits):
    soft = F.softmax(teacher_logits, dim=-1)
    return F.cross_entropy(student_logits, soft)


embedding = torch.randn(30, 16, requires_grad=True)
w_out = torch.randn(16, 30, requires_grad=True)
ids = torch.randint(0, 30, (8, 21))
lm_loss(embedding, w_out, ids).backward()
distill_loss(torch.randn(8, 30), torch.randn(8, 30))
"""),
    ("plain classifier script: (N, C) logits with (N,) labels, and a (N, C, L) conv output", """\
import torch
import torch.nn as nn
import torch.nn.functional as F

clf = nn.Linear(20, 5)
x, labels = torch.randn(64, 20), torch.randint(0, 5, (64,))
loss = F.cross_entropy(clf(x), labels)

conv = nn.Conv1d(8, 5, kernel_size=3, padding=1)
frames, frame_labels = torch.randn(4, 8, 100), torch.randint(0, 5, (4, 100))
frame_loss = nn.CrossEntropyLoss()(conv(frames), frame_labels)

batch = torch.randint(0, 40, (8, 33))
logits = torch.randn(8, 32, 40)
shifted = F.cross_entropy(logits.reshape(-1, 40), batch[:, 1:].reshape(-1))
"""),
]
