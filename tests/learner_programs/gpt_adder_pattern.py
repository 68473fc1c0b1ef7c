"""A character GPT learns one-digit addition, written the way minGPT-style code is: its own
torch.Generator splits the problems, DataLoader comes from torch.utils.data.dataloader, a
RandomSampler draws with replacement, AdamW gets weight-decay groups by module type, and
@torch.no_grad() generation uses topk / multinomial / cat; the answer digits are flipped."""
import io
import math

import torch
import torch.nn as nn
from torch.nn import functional as F
from torch.utils.data import Dataset
from torch.utils.data.dataloader import DataLoader


class SumDigits(Dataset):
    """'a b c1 c0' reversed-answer strings for a + b, a and b single digits."""

    def __init__(self, split):
        order = torch.randperm(100, generator=torch.Generator().manual_seed(1337))
        self.ids = order[:20] if split == "test" else order[20:]

    def __len__(self):
        return self.ids.nelement()

    def __getitem__(self, i):
        n = self.ids[i].item()
        a, b = n // 10, n % 10
        digits = [a, b] + [int(c) for c in f"{a + b:02d}"[::-1]]
        x = torch.tensor(digits[:-1], dtype=torch.long)
        y = torch.tensor(digits[1:], dtype=torch.long)
        y[:1] = -1                                  # no loss on predicting b from a
        return x, y


class GELUTanh(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 *
                                                                        torch.pow(x, 3.0))))


class CausalAttention(nn.Module):
    def __init__(self, d, heads, block):
        super().__init__()
        self.qkv, self.proj, self.heads = nn.Linear(d, 3 * d), nn.Linear(d, d), heads
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block,
                                                                               block))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class TinyGPT(nn.Module):
    def __init__(self, vocab=10, block=3, d=16, heads=2):
        super().__init__()
        self.block = block
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.ln1, self.ln2, self.ln_f = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalAttention(d, heads, block)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), GELUTanh(), nn.Linear(4 * d, d))
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.size(1), dtype=torch.long).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                       ignore_index=-1)

    def optimizer(self, lr):
        decay, no_decay = set(), set()
        for mn, m in self.named_modules():
            for pn, p in m.named_parameters():
                full = f"{mn}.{pn}" if mn else pn
                if pn.endswith("bias") or isinstance(m, (nn.LayerNorm, nn.Embedding)):
                    no_decay.add(full)
                elif pn.endswith("weight") and isinstance(m, nn.Linear):
                    decay.add(full)
        params = dict(self.named_parameters())
        groups = [{"params": [params[n] for n in sorted(decay)], "weight_decay": 0.1},
                  {"params": [params[n] for n in sorted(no_decay)], "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))

    @torch.no_grad()
    def generate(self, idx, steps, do_sample=False, top_k=None):
        for _ in range(steps):
            logits, _ = self(idx[:, -self.block:])
            logits = logits[:, -1, :]
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            nxt = torch.multinomial(probs, num_samples=1) if do_sample else \
                torch.topk(probs, k=1, dim=-1)[1]
            idx = torch.cat((idx, nxt), dim=1)
        return idx


train, test = SumDigits("train"), SumDigits("test")
model = TinyGPT()
optimizer = model.optimizer(3e-3)
sampler = torch.utils.data.RandomSampler(train, replacement=True, num_samples=10 ** 4)
loader = DataLoader(train, sampler=sampler, shuffle=False, batch_size=16, num_workers=0)
batches = iter(loader)
for step in range(30):
    x, y = next(batches)
    _, loss = model(x, y)
    model.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step % 10 == 0:
        print("step %d loss %.5f" % (step, loss.item()))

model.eval()
factors = torch.tensor([[10, 1]])
correct = []
for x, _ in DataLoader(test, batch_size=8, num_workers=0, drop_last=False):
    out = model.generate(x[:, :2], 2)
    answer = (out[:, -2:].flip(1) * factors).sum(1)
    truth = x[:, 0] + x[:, 1]
    correct += [int(c) for c in (answer == truth).cpu()]
print("test score: %d/%d" % (sum(correct), len(correct)))
print(model.generate(torch.tensor([[3, 4]]), 2, do_sample=True, top_k=3).tolist())
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
restored = TinyGPT()
restored.load_state_dict(torch.load(buffer))
print(torch.equal(restored(torch.tensor([[1, 2]]))[0], model(torch.tensor([[1, 2]]))[0]))
