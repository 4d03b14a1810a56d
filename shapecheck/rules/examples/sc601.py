'''SC601 missing-train-eval-mode: rule examples.

Marker (``# <-``): the forward call that runs in the wrong mode: a training step after an
evaluation left the model in eval mode, or an evaluation (no_grad) in training mode. A model's own
``self(...)`` inside one of its methods (``generate``) is reported at the script's call of that
method.
'''

INVALID = [
    ("seed: MiniGPT loop evaluates every 100 steps and never calls model.train() again", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniGPT(nn.Module):
    def __init__(self, vocab_size, d_model=64, max_len=64, dropout=0.1):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.drop(self.token_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))
        return self.head(x)


text = "To be, or not to be, that is the question." * 100
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
model = MiniGPT(vocab_size=len(chars))
optim = torch.optim.AdamW(model.parameters(), lr=3e-4)

for step in range(500):
    ix = torch.randint(0, len(data) - 32, (4,))
    x = torch.stack([data[i:i + 16] for i in ix])
    y = torch.stack([data[i + 1:i + 17] for i in ix])
    logits = model(x)  # <-
    loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
    optim.zero_grad(); loss.backward(); optim.step()
    if step % 100 == 0:
        model.eval()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1))
        print(f"step {step:3d}  loss {loss.item():.4f}  val {val_loss.item():.4f}")
"""),
    ("nanoGPT: estimate_loss switches to eval and forgets model.train()", """\
import torch
import torch.nn as nn
from torch.nn import functional as F

batch_size, block_size, max_iters, eval_interval, eval_iters = 16, 32, 5000, 500, 200
vocab_size, n_embd, dropout = 65, 64, 0.2
data = torch.randint(vocab_size, (10000,))
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
    return x, y


class BigramLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, n_embd)
        self.dropout = nn.Dropout(dropout)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets=None):
        logits = self.lm_head(self.dropout(self.token_embedding_table(idx)))
        if targets is None:
            return logits, None
        B, T, C = logits.shape
        return logits, F.cross_entropy(logits.view(B * T, C), targets.view(B * T))


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    return out


model = BigramLanguageModel()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for iter in range(max_iters):
    if iter % eval_interval == 0:
        losses = estimate_loss()
        print(f"step {iter}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    xb, yb = get_batch("train")
    logits, loss = model(xb, yb)  # <-
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
"""),
    ("nanoGPT: estimate_loss never calls model.eval()", """\
import torch
import torch.nn as nn
from torch.nn import functional as F

block_size, vocab_size, n_embd = 32, 65, 64
data = torch.randint(vocab_size, (10000,))


def get_batch():
    ix = torch.randint(len(data) - block_size, (16,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
    return x, y


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.drop = nn.Dropout(0.1)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets):
        logits = self.lm_head(self.drop(self.wte(idx)))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


@torch.no_grad()
def estimate_loss(model):
    losses = torch.zeros(20)
    for k in range(20):
        X, Y = get_batch()
        logits, loss = model(X, Y)  # <-
        losses[k] = loss.item()
    return losses.mean()


def main():
    model = GPT()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for it in range(1000):
        if it % 100 == 0:
            print(it, estimate_loss(model))
        xb, yb = get_batch()
        logits, loss = model(xb, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
"""),
    ("Hugging Face style: evaluate() leaves the model in eval mode for the next epoch", """\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    vocab_size: int = 100
    hidden_size: int = 32
    hidden_dropout_prob: float = 0.1


class TinyLMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, input_ids, labels=None):
        logits = self.lm_head(self.dropout(self.embed(input_ids)))
        loss = None
        if labels is not None:
            shift_logits = logits[:, :-1, :].contiguous()
            shift_labels = labels[:, 1:].contiguous()
            loss = nn.functional.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return loss, logits


def evaluate(model, input_ids):
    model.eval()
    with torch.no_grad():
        loss, _ = model(input_ids, labels=input_ids)
    return loss.item()


config = Config()
model = TinyLMHeadModel(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
train_ids = torch.randint(0, config.vocab_size, (8, 16))
val_ids = torch.randint(0, config.vocab_size, (8, 16))
model.train()
for epoch in range(3):
    loss, logits = model(train_ids, labels=train_ids)  # <-
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(epoch, evaluate(model, val_ids))
"""),
    ("einops model: sampling with @torch.no_grad() generate() in training mode", """\
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.attn_drop = nn.Dropout(0.1)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        sim = torch.einsum("b h i d, b h j d -> b h i j", q, k) * q.shape[-1] ** -0.5
        n = x.shape[1]
        sim = sim.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        attn = self.attn_drop(sim.softmax(dim=-1))
        out = torch.einsum("b h i j, b h j d -> b h i d", attn, v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class TinyLM(nn.Module):
    def __init__(self, num_tokens=50, dim=32):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.pos = nn.Embedding(128, dim)
        self.attn = Attention(dim)
        self.logits = nn.Linear(dim, num_tokens)

    def forward(self, x):
        h = self.emb(x) + self.pos(torch.arange(x.shape[1]))
        return self.logits(h + self.attn(h))

    @torch.no_grad()
    def generate(self, prompt, steps):
        out = prompt
        for _ in range(steps):
            logits = self(out)[:, -1]
            out = torch.cat((out, logits.argmax(dim=-1, keepdim=True)), dim=-1)
        return out


model = TinyLM()
opt = torch.optim.Adam(model.parameters(), lr=3e-4)
seq = torch.randint(0, 50, (4, 17))
for _ in range(100):
    logits = model(seq[:, :-1])
    loss = F.cross_entropy(rearrange(logits, "b n c -> b c n"), seq[:, 1:])
    loss.backward()
    opt.step()
    opt.zero_grad()
sample = model.generate(seq[:, :4], 8)  # <-
"""),
    ("functional: nn.Sequential with BatchNorm1d, model.train(False) for validation, never back", """\
import torch
import torch.nn.functional as F
from torch import nn


def main():
    model = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(256, 20), torch.randint(0, 3, (256,))
    xv, yv = torch.randn(64, 20), torch.randint(0, 3, (64,))
    for epoch in range(10):
        loss = F.cross_entropy(model(x), y)  # <-
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        model.train(False)
        with torch.inference_mode():
            accuracy = (model(xv).argmax(-1) == yv).float().mean()
        print(epoch, loss.item(), accuracy.item())
"""),
    ("plain training script: a train_epoch helper, evaluation in the epoch loop without train()", """\
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, n_classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Dropout(0.3), nn.Linear(d_hidden, n_classes))

    def forward(self, x):
        return self.net(x)


def train_epoch(model, optimizer, criterion, loader):
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)  # <-
        loss.backward()
        optimizer.step()


def run(train_loader, val_loader, epochs=5):
    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        train_epoch(model, optimizer, criterion, train_loader)
        model.eval()
        with torch.no_grad():
            correct = sum((model(x).argmax(1) == y).sum().item() for x, y in val_loader)
        print(epoch, correct)
"""),
]

VALID = [
    ("seed 2 repaired: model.train() each step, model.eval() under no_grad to validate", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniGPT(nn.Module):
    def __init__(self, vocab_size, d_model=64, max_len=64, dropout=0.1):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        x = self.drop(self.token_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)))
        return self.head(x)


text = "To be, or not to be, that is the question." * 100
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
model = MiniGPT(vocab_size=len(chars))
optim = torch.optim.AdamW(model.parameters(), lr=3e-4)

for step in range(500):
    model.train()
    ix = torch.randint(0, len(data) - 32, (4,))
    x = torch.stack([data[i:i + 16] for i in ix])
    y = torch.stack([data[i + 1:i + 17] for i in ix])
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, len(chars)), y.view(-1))
    optim.zero_grad(); loss.backward(); optim.step()
    if step % 100 == 0:
        model.eval()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(x).view(-1, len(chars)), y.view(-1))
"""),
    ("nanoGPT: estimate_loss with model.eval() ... model.train()", """\
import torch
import torch.nn as nn
from torch.nn import functional as F

block_size, vocab_size, n_embd = 32, 65, 64
data = torch.randint(vocab_size, (10000,))


def get_batch():
    ix = torch.randint(len(data) - block_size, (16,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + block_size + 1] for i in ix])
    return x, y


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.drop = nn.Dropout(0.1)
        self.lm_head = nn.Linear(n_embd, vocab_size)

    def forward(self, idx, targets):
        logits = self.lm_head(self.drop(self.wte(idx)))
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


@torch.no_grad()
def estimate_loss():
    model.eval()
    losses = torch.zeros(20)
    for k in range(20):
        X, Y = get_batch()
        logits, loss = model(X, Y)
        losses[k] = loss.item()
    model.train()
    return losses.mean()


model = GPT()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for it in range(1000):
    if it % 100 == 0:
        print(it, estimate_loss())
    xb, yb = get_batch()
    logits, loss = model(xb, yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
"""),
    ("Hugging Face style: model.train() at the start of each epoch, evaluate() in eval mode", """\
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Config:
    vocab_size: int = 100
    hidden_size: int = 32
    hidden_dropout_prob: float = 0.1


class TinyLMHeadModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)

    def forward(self, input_ids, labels=None):
        logits = self.lm_head(self.dropout(self.embed(input_ids)))
        shift_logits = logits[:, :-1, :].contiguous()
        shift_labels = labels[:, 1:].contiguous()
        loss = nn.functional.cross_entropy(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return loss, logits


def evaluate(model, input_ids):
    model.eval()
    with torch.no_grad():
        loss, _ = model(input_ids, labels=input_ids)
    return loss.item()


config = Config()
model = TinyLMHeadModel(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
train_ids = torch.randint(0, config.vocab_size, (8, 16))
for epoch in range(3):
    model.train()
    loss, logits = model(train_ids, labels=train_ids)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(epoch, evaluate(model, train_ids))
"""),
    ("seed 2 as published: no dropout, so eval() without train() changes nothing", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class MiniGPT(nn.Module):
    def __init__(self, vocab_size, d_model=64, max_len=64):
        super().__init__()
        self.token_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(max_len, d_model)
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        B, T = idx.shape
        return self.head(self.ln_f(self.token_emb(idx) + self.pos_emb(torch.arange(T))))


data = torch.randint(0, 14, (4200,))
model = MiniGPT(vocab_size=14)
optim = torch.optim.AdamW(model.parameters(), lr=3e-4)
for step in range(500):
    ix = torch.randint(0, len(data) - 32, (4,))
    x = torch.stack([data[i:i + 16] for i in ix])
    y = torch.stack([data[i + 1:i + 17] for i in ix])
    loss = F.cross_entropy(model(x).view(-1, 14), y.view(-1))
    optim.zero_grad(); loss.backward(); optim.step()
    if step % 100 == 0:
        model.eval()
        with torch.no_grad():
            print(F.cross_entropy(model(x).view(-1, 14), y.view(-1)).item())
"""),
    ("reference style: estimate_loss restores the previous mode in finally", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, vocab=20, d=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        return self.out(self.drop(self.emb(x)))


@torch.no_grad()
def estimate_loss(model, x, y):
    was_training = model.training
    model.eval()
    try:
        return F.cross_entropy(model(x).flatten(0, 1), y.flatten()).item()
    finally:
        model.train(was_training)


def train(steps=100):
    model = Net()
    opt = torch.optim.AdamW(model.parameters())
    ids = torch.randint(0, 20, (4, 9))
    for step in range(steps):
        model.train()
        loss = F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(estimate_loss(model, ids[:, :-1], ids[:, 1:]))
"""),
    ("einops model with dropout 0.0: modes make no difference", """\
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, num_tokens=50, dim=32):
        super().__init__()
        self.emb = nn.Embedding(num_tokens, dim)
        self.drop = nn.Dropout(p=0.0)
        self.logits = nn.Linear(dim, num_tokens)

    def forward(self, x):
        return self.logits(self.drop(self.emb(x)))


model = TinyLM()
opt = torch.optim.Adam(model.parameters(), lr=3e-4)
seq = torch.randint(0, 50, (4, 17))
for step in range(100):
    loss = F.cross_entropy(rearrange(model(seq[:, :-1]), "b n c -> b c n"), seq[:, 1:])
    loss.backward()
    opt.step()
    if step % 10 == 0:
        model.eval()
        with torch.no_grad():
            print(model(seq[:, :-1]).shape)
"""),
    ("functional inference script: evaluated under no_grad, never trained", """\
import torch
from torch import nn


def predict(x):
    model = nn.Sequential(nn.Linear(20, 64), nn.Dropout(0.2), nn.ReLU(), nn.Linear(64, 3))
    model.eval()
    with torch.no_grad():
        return model(x).argmax(-1)


def features(x):
    encoder = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64))
    with torch.no_grad():
        return encoder(x)
"""),
    ("plain training script: eval() then train() around validation, helper keeps the mode", """\
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, n_classes=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Dropout(0.3), nn.Linear(d_hidden, n_classes))

    def forward(self, x):
        return self.net(x)


def train_epoch(model, optimizer, criterion, loader):
    model.train()
    for inputs, labels in loader:
        optimizer.zero_grad()
        loss = criterion(model(inputs), labels)
        loss.backward()
        optimizer.step()


def validate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum((model(x).argmax(1) == y).sum().item() for x, y in loader)


def run(train_loader, val_loader, epochs=5):
    model = Classifier()
    optimizer = torch.optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        train_epoch(model, optimizer, criterion, train_loader)
        print(epoch, validate(model, val_loader))
"""),
]

VALID += [
    ("plain training script: a frozen teacher kept in eval mode, only the student trains", """\
import torch
import torch.nn as nn
import torch.nn.functional as F


def make_net():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 4))


def distill(loader, epochs=3):
    teacher, student = make_net(), make_net()
    teacher.eval()
    teacher.requires_grad_(False)
    optimizer = torch.optim.Adam(student.parameters())
    for epoch in range(epochs):
        student.train()
        for x, y in loader:
            soft = F.softmax(teacher(x), dim=-1)
            loss = F.cross_entropy(student(x), soft)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        student.eval()
        with torch.no_grad():
            print(sum((student(x).argmax(-1) == y).sum().item() for x, y in loader))
"""),
    ("an imported evaluate(model) may switch modes: nothing is claimed after it", """\
import torch
import torch.nn as nn
from my_project.evaluation import evaluate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


def fit(loader):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(5):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        model.eval()
        evaluate(model, loader)  # switches back to train mode when it is done
"""),
]
