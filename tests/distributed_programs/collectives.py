"""Every collective once, on torch (the oracle: gloo) or on tinyattn; each rank writes its
results to OUT.<rank>.json.   python collectives.py OUT {torch|tinyattn}"""
import json
import sys

if sys.argv[2] == "torch":
    import torch as lib
    import torch.distributed as dist
else:
    import tinyattn as lib
    import tinyattn.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
results = {"rank": rank, "world": world}
for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
    t = lib.tensor([1.5, -2.0, 3.0], dtype=lib.float64) * (rank + 1) + rank
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    results[f"all_reduce_{op}"] = t.tolist()
t = lib.tensor([[1, 2], [3, 4]]) * (rank + 1)
dist.all_reduce(t)
results["all_reduce_int64"] = [t.tolist(), str(t.dtype).replace("torch.", "")]
t = lib.tensor([0.1, 1000.0, 3.0], dtype=lib.float16) * (rank + 1)
dist.all_reduce(t)
results["all_reduce_float16"] = [t.tolist(), str(t.dtype).replace("torch.", "")]
t = lib.tensor([float(rank), 2.0 * rank + 1])
dist.broadcast(t, src=world - 1)
results["broadcast"] = t.tolist()
outs = [lib.zeros(2) for _ in range(world)]
dist.all_gather(outs, lib.tensor([float(rank), rank + 0.5]))
results["all_gather"] = [o.tolist() for o in outs]
out = lib.zeros(2)
dist.reduce_scatter(out, [lib.tensor([float(i + 10 * rank), 1.0]) for i in range(world)])
results["reduce_scatter"] = out.tolist()
whole = lib.zeros(2 * world)
dist.all_gather_into_tensor(whole, lib.tensor([float(rank), -float(rank)]))
results["all_gather_into_tensor"] = whole.tolist()
part = lib.zeros(2)
dist.reduce_scatter_tensor(part, lib.arange(2 * world, dtype=lib.float32) * (rank + 1))
results["reduce_scatter_tensor"] = part.tolist()
t = lib.ones(3) * rank
work = dist.all_reduce(t, async_op=True)
results["async"] = [work.wait(), t.tolist()]
dist.barrier()
with open(f"{sys.argv[1]}.{rank}.json", "w") as f:
    json.dump(results, f)
dist.destroy_process_group()
