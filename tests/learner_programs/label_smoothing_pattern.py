"""An embedding-to-vocabulary model learns a copy task with label smoothing written the way
the Annotated Transformer writes it: KLDivLoss(reduction="sum") against a smoothed target
built with fill_ / scatter_ / index_fill_, a Noam learning-rate rule in LambdaLR, and a
sinusoidal table built with exp / sin / cos."""
import math

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import LambdaLR


class SmoothedKL(nn.Module):
    def __init__(self, size, padding_idx, smoothing):
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx, self.size = padding_idx, size
        self.confidence, self.smoothing = 1.0 - smoothing, smoothing

    def forward(self, x, target):
        true_dist = x.detach().clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        mask = torch.nonzero(target == self.padding_idx)
        if mask.dim() > 0:
            true_dist.index_fill_(0, mask.squeeze(), 0.0)
        return self.criterion(x, true_dist.clone().detach())


def sinusoids(length, d):
    table = torch.zeros(length, d)
    position = torch.arange(0, length).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2) * -(math.log(10000.0) / d))
    table[:, 0::2] = torch.sin(position * div)
    table[:, 1::2] = torch.cos(position * div)
    return table


def rate(step, d, factor, warmup):
    step = max(step, 1)
    return factor * (d ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


V, D = 7, 16
embed, proj = nn.Embedding(V, D), nn.Linear(D, V)
pe = sinusoids(6, D)
criterion = SmoothedKL(V, padding_idx=0, smoothing=0.2)
params = list(embed.parameters()) + list(proj.parameters())
optimizer = torch.optim.Adam(params, lr=1.0, betas=(0.9, 0.98), eps=1e-9)
schedule = LambdaLR(optimizer, lr_lambda=lambda step: rate(step, D, 1.0, 20))
for step in range(25):
    tokens = torch.randint(0, V, (4, 6))
    hidden = embed(tokens) * math.sqrt(D) + pe
    logp = proj(hidden).log_softmax(dim=-1)
    loss = criterion(logp.view(-1, V), tokens.view(-1)) / (tokens != 0).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    schedule.step()
    if step % 6 == 0:
        print("step %d loss %.6f lr %.6f" % (step, loss.item(), schedule.get_last_lr()[0]))
print([round(v, 6) for v in pe[3, :4].tolist()])
