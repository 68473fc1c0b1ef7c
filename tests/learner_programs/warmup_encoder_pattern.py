"""A one-block attention encoder learns to reverse digit sequences, written the way course
notebooks write it: one fused qkv Linear split with chunk, a mask broadcast up to four
dimensions with masked_fill(mask == 0, -9e15), a non-persistent sinusoidal buffer, Adam
under a warmup-cosine schedule that subclasses the old ``_LRScheduler`` name and computes
its factor with NumPy (NumPy floats as learning rates), and clip_grad_norm_."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.data as data
from torch import optim


def attend(q, k, v, mask=None):
    logits = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size()[-1])
    if mask is not None:
        logits = logits.masked_fill(mask == 0, -9e15)
    weights = F.softmax(logits, dim=-1)
    return torch.matmul(weights, v), weights


def four_dims(mask):
    if mask.ndim == 3:
        mask = mask.unsqueeze(1)
    while mask.ndim < 4:
        mask = mask.unsqueeze(0)
    return mask


class FusedAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.dim = heads, dim
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        nn.init.xavier_uniform_(self.qkv.weight)
        self.qkv.bias.data.fill_(0)

    def forward(self, x, mask=None):
        b, t, _ = x.size()
        qkv = self.qkv(x).reshape(b, t, self.heads, -1).permute(0, 2, 1, 3)
        q, k, v = qkv.chunk(3, dim=-1)
        values, weights = attend(q, k, v, None if mask is None else four_dims(mask))
        return self.out(values.permute(0, 2, 1, 3).reshape(b, t, self.dim)), weights


class Sinusoids(nn.Module):
    def __init__(self, dim, max_len=64):
        super().__init__()
        table = torch.zeros(max_len, dim)
        pos = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        rate = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
        table[:, 0::2] = torch.sin(pos * rate)
        table[:, 1::2] = torch.cos(pos * rate)
        self.register_buffer("table", table.unsqueeze(0), persistent=False)

    def forward(self, x):
        return x + self.table[:, :x.size(1)]


class Reverser(nn.Module):
    def __init__(self, classes=8, dim=24, heads=2):
        super().__init__()
        self.embed = nn.Sequential(nn.Dropout(0.0), nn.Linear(classes, dim))
        self.pos = Sinusoids(dim)
        self.attn = FusedAttention(dim, heads)
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(inplace=True),
                                nn.Linear(2 * dim, dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, x, mask=None):
        h = self.pos(self.embed(x))
        a, weights = self.attn(h, mask)
        h = self.norm1(h + a)
        return self.head(self.norm2(h + self.ff(h))), weights


class WarmupCosine(optim.lr_scheduler._LRScheduler):
    def __init__(self, optimizer, warmup, max_iters):
        self.warmup, self.max_iters = warmup, max_iters
        super().__init__(optimizer)

    def get_lr(self):
        factor = 0.5 * (1 + np.cos(np.pi * self.last_epoch / self.max_iters))
        if self.last_epoch <= self.warmup:
            factor *= self.last_epoch * 1.0 / self.warmup
        return [base * factor for base in self.base_lrs]


class Reversed(data.Dataset):
    def __init__(self, size, length=10, classes=8):
        self.seqs = torch.randint(classes, size=(size, length))

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return self.seqs[i], torch.flip(self.seqs[i], dims=(0,))


model = Reverser()
print(model)
print(list(model.state_dict())[:4], [n for n, _ in model.named_buffers()])
opt = optim.Adam(model.parameters(), lr=3e-3)
sched = WarmupCosine(opt, warmup=4, max_iters=24)
print(sorted(sched.state_dict()), sched.get_last_lr())
loader = data.DataLoader(Reversed(192), batch_size=32, shuffle=True, drop_last=True)
for epoch in range(4):
    for seqs, target in loader:
        logits, _ = model(F.one_hot(seqs, num_classes=8).float())
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), target.view(-1))
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    acc = (logits.argmax(dim=-1) == target).float().mean()
    print(f"epoch {epoch} loss {loss.item():.5f} acc {acc:.4f} norm {norm:.5f} "
          f"lr {sched.get_last_lr()[0]:.6e} {type(opt.param_groups[0]['lr']).__name__}")
seqs, _ = next(iter(loader))
with torch.no_grad():
    logits, weights = model(F.one_hot(seqs, num_classes=8).float(),
                            mask=torch.tril(torch.ones(10, 10)))
print(weights.shape, weights[0, 1, :3, :4])
print(logits[0, :2])
