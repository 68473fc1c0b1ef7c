"""The measurements of docs/distributed.md: data-parallel training of a small GPT on 1, 2
and 4 processes of this machine (step time, bytes each rank sends per step) and the
timeline of one backward on rank 0 (when each bucket's gradients were ready, when its
all-reduce started and finished).

    python docs/measure_distributed.py            # prints the table and the timeline

It starts itself on each number of processes with python -m tinyattn.distributed.run
(needs mpi4py and an MPI runtime). Nothing is written into the repository.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

GLOBAL_BATCH, SEQ, STEPS, WARMUP = 16, 64, 5, 2


def worker(out: str, bucket_cap_mb: float) -> None:
    import numpy as np

    import tinyattn as ta
    import tinyattn.distributed as dist
    from tinyattn.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    ta.manual_seed(0)
    config = ta.nn.GPTConfig(vocab_size=65, block_size=SEQ, d_model=128, n_head=4,
                             n_layer=4)
    model = DDP(ta.nn.GPT(config), bucket_cap_mb=bucket_cap_mb)
    optimizer = ta.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(rank)
    per_rank = GLOBAL_BATCH // world
    times = []
    for step in range(WARMUP + STEPS):
        batch = rng.integers(0, 65, size=(per_rank, SEQ + 1))
        dist.barrier()
        start = time.perf_counter()
        _, loss = model(ta.tensor(batch[:, :-1]), ta.tensor(batch[:, 1:]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    payload = sum((b.numel + len(b.params)) * 4 for b in model._buckets)
    log = [(kind, bucket, t) for kind, bucket, _, t in model._bucket_log]
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"world": world, "step_seconds": sorted(times[WARMUP:])[STEPS // 2],
                       "payload_bytes": payload, "buckets": len(model._buckets),
                       "parameters": sum(p.numel() for p in model.parameters()),
                       "log": log}, f)
    dist.destroy_process_group()


def timeline(result: dict, width: int = 64) -> str:
    """Rank 0's last backward, drawn in text: one row per bucket, '.' while its gradients
    come in, '=' while its all-reduce is in flight; times from the end of the forward."""
    log = result["log"]
    t0 = log[0][2]
    end = max(t for _, _, t in log)
    scale = width / max(end - t0, 1e-9)
    rows = []
    for bucket in range(result["buckets"]):
        ready = [t for kind, b, t in log if b == bucket and kind == "ready"]
        launch = [t for kind, b, t in log if b == bucket and kind == "launch"]
        done = [t for kind, b, t in log if b == bucket and kind == "done"]
        line = [" "] * (width + 1)
        for t in ready:
            line[int((t - t0) * scale)] = "."
        if launch and done:
            for col in range(int((launch[0] - t0) * scale), int((done[0] - t0) * scale) + 1):
                line[col] = "="
        rows.append(f"bucket {bucket:<2} |{''.join(line)}|")
    rows.append(f"          0 ms{' ' * (width - 12)}{(end - t0) * 1000:.0f} ms")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker")
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.bucket_cap_mb)
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for nprocs in (1, 2, 4):
            out = os.path.join(tmp, f"{nprocs}.json")
            subprocess.run([sys.executable, "-m", "tinyattn.distributed.run",
                            "--nproc_per_node", str(nprocs), os.path.abspath(__file__),
                            "--worker", out, "--bucket-cap-mb", str(args.bucket_cap_mb)],
                           check=True, env=env, timeout=900)
            with open(out) as f:
                results.append(json.load(f))
    print(f"GPT: {results[0]['parameters']} parameters, {results[0]['buckets']} buckets, "
          f"global batch {GLOBAL_BATCH} x {SEQ} tokens, float32\n")
    print("| processes | batch per process | step time (median of 5) | bytes all-reduced "
          "per rank | bytes each rank sends (ring: 2(N-1)/N x) |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        n = r["world"]
        sent = 2 * (n - 1) / n * r["payload_bytes"]
        print(f"| {n} | {GLOBAL_BATCH // n} | {r['step_seconds'] * 1000:.0f} ms | "
              f"{r['payload_bytes'] / 1e6:.2f} MB | {sent / 1e6:.2f} MB |")
    print("\nrank 0's backward on 2 processes:\n")
    print(timeline(results[1]))


if __name__ == "__main__":
    main()
