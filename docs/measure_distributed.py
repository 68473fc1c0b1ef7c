"""The measurements of docs/distributed.md: data-parallel training of a small GPT on 1, 2
and 4 processes of this machine (step time, bytes each rank sends per step) and the
timeline of one backward on rank 0 (when each bucket's gradients were ready, when its
all-reduce started and finished).

    python docs/measure_distributed.py            # prints the table and the timeline
    python docs/measure_distributed.py --timeline-only --record t.json --png t.png

It starts itself on each number of processes with python -m tinyattn.distributed.run
(needs mpi4py and an MPI runtime). Nothing is written into the repository unless a --record
or --png path there is given (docs/make_figures.py does that for docs/figures/ddp_timeline.png
and its record docs/results/ddp_timeline.json).
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
    times, backward_span = [], (0.0, 0.0)
    for step in range(WARMUP + STEPS):
        batch = rng.integers(0, 65, size=(per_rank, SEQ + 1))
        dist.barrier()
        start = time.perf_counter()
        _, loss = model(ta.tensor(batch[:, :-1]), ta.tensor(batch[:, 1:]))
        optimizer.zero_grad()
        backward_start = time.perf_counter()
        loss.backward()
        backward_span = (backward_start, time.perf_counter())
        optimizer.step()
        times.append(time.perf_counter() - start)
    payload = sum((b.numel + len(b.params)) * 4 for b in model._buckets)
    log = [(kind, bucket, t) for kind, bucket, _, t in model._bucket_log]  # the last step
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"world": world, "step_seconds": sorted(times[WARMUP:])[STEPS // 2],
                       "payload_bytes": payload, "buckets": len(model._buckets),
                       "parameters": sum(p.numel() for p in model.parameters()),
                       "log": log, "backward_span": backward_span,
                       "cpu": _cpu_name(), "load_average": os.getloadavg()}, f)
    dist.destroy_process_group()


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine()


def timeline_spans(result: dict) -> dict:
    """Rank 0's last synchronised backward, in seconds from its start: the span in which
    gradients were computed (start to the last parameter ready), when loss.backward()
    returned (after waiting for the last all-reduces), and per bucket its ready times and
    its all-reduce's (launch, done)."""
    t0 = result["backward_span"][0]
    log = result["log"]
    ready_all = [t for kind, _, t in log if kind == "ready"]
    buckets = []
    for bucket in range(result["buckets"]):
        events = {kind: [t - t0 for k, b, t in log if b == bucket and k == kind]
                  for kind in ("ready", "launch", "done")}
        buckets.append({"ready": events["ready"],
                        "all_reduce": (events["launch"][0], events["done"][0])})
    return {"gradients_computed": (0.0, max(ready_all) - t0),
            "backward_returned": result["backward_span"][1] - t0, "buckets": buckets}


def overlapping_buckets(result: dict) -> list:
    """The buckets whose all-reduce started before the last gradient was computed."""
    spans = timeline_spans(result)
    end = spans["gradients_computed"][1]
    return [i for i, b in enumerate(spans["buckets"]) if b["all_reduce"][0] < end]


def draw_timeline(result: dict, path: str) -> None:
    """The PNG: one row per bucket (dots: its parameters' gradients ready; bar: its
    all-reduce in flight), above them the backward's span."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    spans = timeline_spans(result)
    ms = 1000.0
    rows = len(spans["buckets"])
    fig, ax = plt.subplots(figsize=(8, 0.28 * rows + 2.2))
    start, end = spans["gradients_computed"]
    ax.broken_barh([(start * ms, (end - start) * ms)], (rows - 0.4, 0.8), color="#999999",
                   label="backward: computing gradients")
    ax.broken_barh([(end * ms, (spans["backward_returned"] - end) * ms)], (rows - 0.4, 0.8),
                   facecolor="none", edgecolor="#999999", hatch="//",
                   label="backward: waiting for the last all-reduces")
    for i, bucket in enumerate(spans["buckets"]):
        launch, done = bucket["all_reduce"]
        ax.broken_barh([(launch * ms, max(done - launch, 1e-4) * ms)], (i - 0.3, 0.6),
                       color="#4c9be8", label="all-reduce in flight" if i == 0 else None)
        ax.plot([t * ms for t in bucket["ready"]], [i] * len(bucket["ready"]), "k.",
                markersize=4, label="a parameter's gradient ready" if i == 0 else None)
    ax.axvline(end * ms, color="#cc3333", linewidth=1, linestyle="--",
               label="last gradient computed")
    ax.set_yticks(list(range(rows)) + [rows])
    ax.set_yticklabels([f"bucket {i}" for i in range(rows)] + ["backward"], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("ms since loss.backward() was called (rank 0, last step)")
    overlap = len(overlapping_buckets(result))
    ax.set_title(f"DDP on {result['world']} processes: {overlap} of {rows} buckets start "
                 f"their all-reduce before the backward ends", fontsize=10)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def record_run(nprocs: int, out: str, bucket_cap_mb: float) -> dict:
    """One run on ``nprocs`` processes through the launcher; rank 0's record."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    subprocess.run([sys.executable, "-m", "tinyattn.distributed.run",
                    "--nproc_per_node", str(nprocs), os.path.abspath(__file__),
                    "--worker", out, "--bucket-cap-mb", str(bucket_cap_mb)],
                   check=True, env=env, timeout=900)
    with open(out) as f:
        return json.load(f)


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
    parser.add_argument("--timeline-only", action="store_true",
                        help="only the 2-process run whose timeline is drawn")
    parser.add_argument("--record", help="write the 2-process run's record (JSON) here")
    parser.add_argument("--png", help="draw the 2-process timeline into this PNG")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.bucket_cap_mb)
        return
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for nprocs in (2,) if args.timeline_only else (1, 2, 4):
            results[nprocs] = record_run(nprocs, os.path.join(tmp, f"{nprocs}.json"),
                                         args.bucket_cap_mb)
    if args.record:
        with open(args.record, "w") as f:
            json.dump(results[2], f, indent=1)
    if args.png:
        draw_timeline(results[2], args.png)
    if not args.timeline_only:
        first = results[1]
        print(f"GPT: {first['parameters']} parameters, {first['buckets']} buckets, "
              f"global batch {GLOBAL_BATCH} x {SEQ} tokens, float32\n")
        print("| processes | batch per process | step time (median of 5) | bytes all-reduced "
              "per rank | bytes each rank sends (ring: 2(N-1)/N x) |")
        print("| --- | --- | --- | --- | --- |")
        for n, r in results.items():
            sent = 2 * (n - 1) / n * r["payload_bytes"]
            print(f"| {n} | {GLOBAL_BATCH // n} | {r['step_seconds'] * 1000:.0f} ms | "
                  f"{r['payload_bytes'] / 1e6:.2f} MB | {sent / 1e6:.2f} MB |")
    print(f"\nrank 0's backward on 2 processes (load average {results[2]['load_average']}):\n")
    print(timeline(results[2]))
    print(f"buckets whose all-reduce started before the last gradient was computed: "
          f"{overlapping_buckets(results[2])}")


if __name__ == "__main__":
    main()
