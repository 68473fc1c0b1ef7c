"""The Annotated Transformer's pattern: mp.spawn(worker, nprocs=2), then in each worker
init_process_group(rank=i, world_size=2) and collectives. Written for torch; run with real
torch (the oracle) or under `python -m tinyattn run-torch`. Writes <out>.<rank>.json per
rank and <out>.parent.json (how a failing worker's error reached the parent).

    python spawn_group.py OUT MASTER_PORT
"""
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, world_size, out):
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world_size)
    summed = torch.tensor([float(rank + 1), 10.0 * rank])
    dist.all_reduce(summed)
    gathered = [torch.zeros(1) for _ in range(world_size)]
    dist.all_gather(gathered, torch.tensor([float(rank * rank)]))
    with open(f"{out}.{rank}.json", "w") as handle:
        json.dump({"rank": dist.get_rank(), "world_size": dist.get_world_size(),
                   "summed": summed.tolist(), "gathered": [g.item() for g in gathered],
                   "tensor_from": type(summed).__module__.partition(".")[0]},
                  handle)
    dist.destroy_process_group()


def failing_worker(rank, world_size):
    if rank == 1:
        raise ValueError("rank 1 fails on purpose")


if __name__ == "__main__":
    out, port = sys.argv[1], sys.argv[2]
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", port
    mp.spawn(worker, args=(2, out), nprocs=2, join=True)
    try:
        mp.spawn(failing_worker, args=(2,), nprocs=2, join=True)
        caught = None
    except Exception as exc:                       # torch's ProcessRaisedException
        caught = {"type": type(exc).__name__, "message": str(exc),
                  "error_index": getattr(exc, "error_index", None)}
    with open(f"{out}.parent.json", "w") as handle:
        json.dump(caught, handle)
