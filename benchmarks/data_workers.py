"""DataLoader workers with real per-sample work: does num_workers=2 feed a training loop
faster than num_workers=0?

    python benchmarks/data_workers.py                 # 7 rounds of 0, 1, 2 workers
    python benchmarks/data_workers.py --rounds 11 --json out.json
    python benchmarks/data_workers.py --tiny          # a smoke run (seconds)

Each ``__getitem__`` does about 2 ms of NumPy arithmetic (element-wise, so BLAS threads do
not matter; the time one sample takes here is measured and printed), and the loop runs a
small MLP's training step on every batch (tinyattn: forward, backward, SGD). Each
configuration runs in its own fresh process (so one configuration's workers, caches and
allocations cannot help or hurt the next), the configurations alternate round by round (so
a change in the machine's load falls on all of them), and the table gives each one's
median and quartiles of the whole loop (worker start-up included: a user pays it), the CPU,
and the load average before and after. Nothing is written unless --json is given.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from typing import Dict, List

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FEATURES, HIDDEN, CLASSES = 256, 256, 10


class WorkDataset:
    """Sample i: a (FEATURES,) float32 vector: 16k normal numbers, then ``repeats`` passes
    of element-wise arithmetic over them (about 2.1 ms of CPU at repeats=8 on this AMD EPYC
    core)."""

    def __init__(self, size: int, repeats: int):
        self.size, self.repeats = size, repeats

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        rng = np.random.default_rng(index)
        values = rng.standard_normal(16384)
        for _ in range(self.repeats):
            values = np.tanh(values * 1.1 + 0.1) + np.sin(values)
        features = values.reshape(FEATURES, -1).mean(axis=1).astype(np.float32)
        return features, index % CLASSES


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def one_configuration(num_workers: int, samples: int, batch_size: int, repeats: int) -> Dict:
    """Runs in its own process: one pass of the training loop; its seconds."""
    sys.path.insert(0, ROOT)
    import tinyattn as ta
    from tinyattn import nn
    from tinyattn.utils.data import DataLoader
    import tinyattn.functional as F

    ta.manual_seed(0)
    model = nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, CLASSES))
    optimizer = ta.optim.SGD(model.parameters(), lr=0.01)
    dataset = WorkDataset(samples, repeats)
    started = time.process_time()                          # CPU time: load does not count
    for index in range(8):
        dataset[index]
    sample_ms = (time.process_time() - started) / 8 * 1000
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=num_workers)
    started = time.perf_counter()
    steps = 0
    for features, labels in loader:
        loss = F.cross_entropy(model(features), labels)     # (B, FEATURES) -> (B, CLASSES)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        steps += 1
    seconds = time.perf_counter() - started
    step_started = time.process_time()
    for _ in range(4):                                      # the training step alone
        loss = F.cross_entropy(model(features), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    step_ms = (time.process_time() - step_started) / 4 * 1000
    return {"num_workers": num_workers, "seconds": seconds, "steps": steps,
            "sample_ms": sample_ms, "step_ms": step_ms}


def quartiles(values: List[float]) -> List[float]:
    return [float(v) for v in np.percentile(values, [25, 50, 75])]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=8,
                        help="arithmetic passes per sample (about 2 ms of CPU at 8)")
    parser.add_argument("--blas-threads", default="1",
                        help="BLAS threads of the training process (OPENBLAS/OMP/MKL_NUM_THREADS"
                             "; 'default' leaves them alone). 1, as the other benchmarks: an "
                             "idle OpenBLAS thread spins for a while after each matrix product "
                             "and takes the core a worker needs")
    parser.add_argument("--tiny", action="store_true", help="a smoke run: 1 round, 32 samples")
    parser.add_argument("--json", help="write every measurement here")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)   # a child's configuration
    args = parser.parse_args(argv)
    if args.tiny:
        args.rounds, args.samples, args.repeats = 1, 32, 1
    if args.one is not None:
        print(json.dumps(one_configuration(args.one, args.samples, args.batch_size,
                                           args.repeats)))
        return 0
    load_before = os.getloadavg()
    runs: Dict[int, List[Dict]] = {n: [] for n in args.workers}
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if args.blas_threads != "default":
        env.update({name: args.blas_threads for name in (
            "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    for round_number in range(args.rounds):
        shift = round_number % len(args.workers)
        for num_workers in args.workers[shift:] + args.workers[:shift]:     # alternate
            done = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--one", str(num_workers),
                 "--samples", str(args.samples), "--batch-size", str(args.batch_size),
                 "--repeats", str(args.repeats)],
                env=env, capture_output=True, text=True, timeout=900, check=True)
            runs[num_workers].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"round {round_number + 1}/{args.rounds}  num_workers={num_workers}  "
                  f"{runs[num_workers][-1]['seconds']:.2f} s", flush=True)
    load_after = os.getloadavg()
    first = runs[args.workers[0]][0]
    print(f"\nCPU: {cpu_name()}, {os.cpu_count()} logical cores; load average "
          f"{load_before[0]:.1f} before, {load_after[0]:.1f} after; BLAS threads of the "
          f"training process: {args.blas_threads}")
    print(f"{args.samples} samples, batch {args.batch_size}: a sample takes "
          f"{np.median([r['sample_ms'] for rs in runs.values() for r in rs]):.1f} ms of CPU, "
          f"a training step {np.median([r['step_ms'] for rs in runs.values() for r in rs]):.1f}"
          f" ms of CPU (medians); {args.rounds} rounds, {first['steps']} steps a pass\n")
    print("| num_workers | median pass | quartiles | median / num_workers=0 |")
    print("| --- | --- | --- | --- |")
    baseline = quartiles([r["seconds"] for r in runs[args.workers[0]]])[1]
    summary = {}
    for num_workers, results in runs.items():
        low, median, high = quartiles([r["seconds"] for r in results])
        summary[num_workers] = {"median": median, "quartiles": [low, high]}
        print(f"| {num_workers} | {median:.2f} s | {low:.2f} to {high:.2f} s | "
              f"{median / baseline:.2f}x |")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"cpu": cpu_name(), "cores": os.cpu_count(), "load_before": load_before,
                       "load_after": load_after, "settings": vars(args), "runs": runs,
                       "summary": summary}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
