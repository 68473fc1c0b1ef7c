"""DDP training of the toy GPT, run on N processes (or on 1 as the reference).

    python ddp_gpt.py OUT.npz [--accumulate K] [--reference WORLD]

Each rank trains on its slice of every global batch (float64, SGD); with --reference WORLD
one process trains on the whole batch (the concatenation of WORLD slices) instead. Rank 0
writes the final parameters to OUT.npz. With --accumulate K, each global batch is split
into K micro-batches, the first K-1 backward passes inside no_sync() (and the alternative,
require_backward_grad_sync, on odd steps), as build-nanogpt does.
"""
import argparse
import datetime

import numpy as np

import tinyattn as ta
import tinyattn.distributed as dist
from tinyattn.nn.parallel import DistributedDataParallel as DDP

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--accumulate", type=int, default=1)
parser.add_argument("--reference", type=int, default=0)
parser.add_argument("--bucket-cap-mb", type=float, default=0.01)
parser.add_argument("--steps", type=int, default=3)
parser.add_argument("--no-ddp", action="store_true",
                    help="negative control: each rank trains alone on its slice")
args = parser.parse_args()

GLOBAL_BATCH, SEQ = 8, 6
ta.manual_seed(0)
config = ta.nn.GPTConfig(vocab_size=11, block_size=SEQ, d_model=16, n_head=2, n_layer=2,
                         dropout=0.0)
model = ta.nn.GPT(config).double()
rng = np.random.default_rng(1)
data = rng.integers(0, 11, size=(args.steps, GLOBAL_BATCH, SEQ + 1))

if args.reference:
    world, rank, net = args.reference, 0, model
else:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    world, rank = dist.get_world_size(), dist.get_rank()
    if rank != 0:                     # different starting weights: DDP must broadcast rank 0's
        with ta.no_grad():
            for p in model.parameters():
                p.mul_(0.5)
    net = model if args.no_ddp else DDP(model, bucket_cap_mb=args.bucket_cap_mb)
optimizer = ta.optim.SGD(model.parameters(), lr=0.1)
per_rank = GLOBAL_BATCH // world
for step in range(args.steps):
    batch = data[step] if args.reference else data[step, rank * per_rank:(rank + 1) * per_rank]
    micro = np.split(batch, args.accumulate) if not args.reference else \
        [np.concatenate([np.split(s, args.accumulate)[k]
                         for s in np.split(batch, world)]) for k in range(args.accumulate)]
    optimizer.zero_grad()
    for k, chunk in enumerate(micro):
        x, y = ta.tensor(chunk[:, :-1]), ta.tensor(chunk[:, 1:])
        last = k == len(micro) - 1
        if args.reference or last:
            _, loss = net(x, y)
            (loss / args.accumulate).backward()
        elif args.no_ddp:
            _, loss = net(x, y)
            (loss / args.accumulate).backward()
        elif step % 2:
            net.require_backward_grad_sync = False
            _, loss = net(x, y)
            (loss / args.accumulate).backward()
            net.require_backward_grad_sync = True
        else:
            with net.no_sync():
                _, loss = net(x, y)
                (loss / args.accumulate).backward()
    optimizer.step()
if rank == 0:
    np.savez(args.out, **{name: p.detach().numpy() for name, p in model.named_parameters()})
if not args.reference:
    dist.destroy_process_group()
