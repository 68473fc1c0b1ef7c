"""build-nanogpt's DDP code path, on CPU (a PyTorch program: run it with real torch, or on
tinyattn with python -m tinyattn run-torch). Started by torchrun's launcher (or ours) it
trains data-parallel; started alone, on one process. Rank 0 writes the final parameters
and the averaged losses to OUT.npz.   python nanogpt_ddp.py OUT"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from torch.distributed import destroy_process_group, init_process_group
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.distributed as dist

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    init_process_group(backend="gloo")
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    ddp_world_size = int(os.environ["WORLD_SIZE"])
    master_process = ddp_rank == 0
else:
    ddp_rank, ddp_local_rank, ddp_world_size, master_process = 0, 0, 1, True


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = nn.Linear(6, 16)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(16, 3)

    def forward(self, x, y=None):
        logits = self.c_proj(self.gelu(self.c_fc(x)))
        loss = None if y is None else nn.functional.cross_entropy(logits, y)
        return logits, loss


class DataLoaderLite:
    """build-nanogpt's loader: each process reads its own stretch of every batch."""

    def __init__(self, B, process_rank, num_processes):
        rng = np.random.default_rng(0)
        self.x = torch.tensor(rng.normal(size=(512, 6)))
        self.y = torch.tensor(rng.integers(0, 3, size=512))
        self.B, self.rank, self.n = B, process_rank, num_processes
        self.position = B * process_rank

    def next_batch(self):
        x = self.x[self.position:self.position + self.B]
        y = self.y[self.position:self.position + self.B]
        self.position += self.B * self.n
        return x, y


model = MLP().double()
init = np.random.default_rng(1)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.tensor(init.normal(scale=0.3, size=tuple(p.shape))))
total_batch_size, B = 32, 4
grad_accum_steps = total_batch_size // (B * ddp_world_size)
train_loader = DataLoaderLite(B=B, process_rank=ddp_rank, num_processes=ddp_world_size)
if ddp:
    model = DDP(model)
raw_model = model.module if ddp else model
optimizer = torch.optim.AdamW(raw_model.parameters(), lr=1e-2, weight_decay=0.1)
losses = []
for step in range(4):
    optimizer.zero_grad()
    loss_accum = 0.0
    for micro_step in range(grad_accum_steps):
        x, y = train_loader.next_batch()
        if ddp:
            model.require_backward_grad_sync = (micro_step == grad_accum_steps - 1)
        logits, loss = model(x, y)
        loss = loss / grad_accum_steps
        loss_accum += loss.detach()
        loss.backward()
    if ddp:
        dist.all_reduce(loss_accum, op=dist.ReduceOp.AVG)
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss_accum.item())
if master_process:
    np.savez(sys.argv[1], losses=np.array(losses),
             **{n: p.detach().numpy() for n, p in raw_model.named_parameters()})
if ddp:
    destroy_process_group()
