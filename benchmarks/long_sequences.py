"""Long sequences: plain, tiled, local, Linformer and Performer attention at S = 1k..16k,
peak memory, forward+backward time and error against exact attention
(docs/long_sequences.md#the-long-sequence-table).

    PYTHONPATH=. python benchmarks/long_sequences.py --tiny          # seconds: a smoke run
    PYTHONPATH=. python benchmarks/long_sequences.py --sizes 1024 2048 4096 8192 16384
    PYTHONPATH=. python benchmarks/long_sequences.py --headline      # local vs dense, S=16384
    PYTHONPATH=. python benchmarks/long_sequences.py --features      # Performer error vs m

Shapes: B=1, h=4, d_k=d_v=64, float32, non-causal; local W=128 (|i - j| <= 128), Linformer
k=256 (random (k, S) projections, as at initialisation), Performer m=256 features.

Every (method, S) runs ALONE in a child process under an address-space limit
(``resource.RLIMIT_AS``, the ``ulimit -v`` of the shell: ``--dense-limit-gib`` for the S x S
paths, ``--limit-gib`` for the others), so a case that would not fit fails with MemoryError
instead of taking the machine down; the table then says "over the limit". Peak memory is
tracemalloc's (NumPy reports its allocations to it), counted from after q, k, v and the
output gradient exist. Time: the median of ``--reps`` more runs (one for S > 4096), with
tracemalloc off. Error: the mean over rows of |out_i - ref_i| / |ref_i|
against float64 references computed in row blocks (never S x S at once): "vs own target"
compares each method with what it computes exactly (full softmax for plain, tiled and
Performer; the band for local; softmax over the projected keys for Linformer), "vs full"
with full softmax attention.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any, Dict, List, Optional

import numpy as np

import tinyattn.functional as F
from tinyattn.nn.masks import sliding_window_mask
from tinyattn.ops.performer import orthogonal_random_features
from tinyattn.tensor import Tensor

__all__ = ["main", "run_case", "reference"]

H, D_K, WINDOW, LINFORMER_K, FEATURES = 4, 64, 128, 256, 256
METHODS = ("plain", "tiled", "local", "linformer", "performer")
DENSE = ("plain", "dense_band")          # the methods that form (h, S, S) arrays


def _inputs(s: int, seed: int = 0) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    shape = (1, H, s, D_K)
    arrays = {name: rng.standard_normal(shape).astype(np.float32) for name in "qkvg"}
    arrays["e"] = (rng.standard_normal((LINFORMER_K, s)) / np.sqrt(LINFORMER_K)).astype(
        np.float32)
    arrays["f"] = (rng.standard_normal((LINFORMER_K, s)) / np.sqrt(LINFORMER_K)).astype(
        np.float32)
    arrays["w"] = orthogonal_random_features(FEATURES, D_K, np.random.default_rng(seed + 1),
                                             dtype=np.float32)
    return arrays


def _forward(method: str, a: Dict[str, np.ndarray], q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    s = q.shape[-2]
    if method == "plain":
        return F.scaled_dot_product_attention(q, k, v)
    if method == "dense_band":
        return F.scaled_dot_product_attention(q, k, v, sliding_window_mask(s, WINDOW + 1, False))
    if method == "tiled":
        return F.scaled_dot_product_attention(q, k, v, impl="tiled", block_size=256)
    if method == "local":
        return F.local_attention(q, k, v, WINDOW)
    if method == "linformer":
        k_low = Tensor(a["e"]) @ k                      # (k, S) @ (1, h, S, d_k)
        v_low = Tensor(a["f"]) @ v
        return F.scaled_dot_product_attention(q, k_low, v_low)
    if method == "performer":
        return F.performer_attention(q, k, v, FEATURES, projection=a["w"])
    raise ValueError(f"unknown method {method!r}; choose from {METHODS + ('dense_band',)}")


def run_case(method: str, s: int, reps: int, out_path: Optional[str] = None) -> Dict[str, Any]:
    """One forward+backward: peak MiB (tracemalloc) and time (s); the output saved to
    ``out_path`` (.npy) for the error. Meant to run in a child process."""
    a = _inputs(s)

    def step() -> Tensor:
        q, k, v = (Tensor(a[n], requires_grad=True) for n in "qkv")
        out = _forward(method, a, q, k, v)
        out.backward(a["g"])
        return out

    tracemalloc.start()
    out = step()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    result = out.numpy()
    del out
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    if out_path:
        np.save(out_path, result)
    return {"method": method, "S": s, "peak_mib": peak, "time_s": statistics.median(times)}


def reference(a: Dict[str, np.ndarray], kind: str, rows: int = 512) -> np.ndarray:
    """float64 exact outputs (1, h, S, d_v), computed in row blocks: "full" softmax, "band"
    (|i - j| <= WINDOW), "linformer" (softmax over the projected keys)."""
    q, k, v = (a[n].astype(np.float64) for n in "qkv")
    s = q.shape[-2]
    if kind == "linformer":
        k, v = a["e"].astype(np.float64) @ k, a["f"].astype(np.float64) @ v
    out = np.empty(q.shape)
    for r0 in range(0, s, rows):
        r1 = min(r0 + rows, s)
        c0, c1 = (max(r0 - WINDOW, 0), min(r1 + WINDOW, s)) if kind == "band" else (0, None)
        keys, values = k[..., c0:c1, :], v[..., c0:c1, :]
        scores = q[..., r0:r1, :] @ np.swapaxes(keys, -1, -2) / np.sqrt(D_K)
        if kind == "band":
            distance = np.arange(r0, r1)[:, None] - np.arange(c0, c0 + keys.shape[-2])[None]
            scores = np.where(np.abs(distance) <= WINDOW, scores, -np.inf)
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        out[..., r0:r1, :] = (scores @ values) / scores.sum(axis=-1, keepdims=True)
    return out


def _relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    return float(np.mean(np.linalg.norm(out - ref, axis=-1) / np.linalg.norm(ref, axis=-1)))


def _child(method: str, s: int, reps: int, limit_gib: float, out_path: str) -> Dict[str, Any]:
    """Run one case in a fresh process under an address-space limit."""
    limit = int(limit_gib * 2**30)

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    command = [sys.executable, os.path.abspath(__file__), "--child", method, str(s),
               "--reps", str(reps), "--out", out_path]
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=cap,
                          env=dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"))
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["?"])[-1]
        return {"method": method, "S": s, "failed": f"over the {limit_gib:g} GiB limit"
                if "MemoryError" in done.stderr else tail}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(methods: List[str], sizes: List[int], reps: int, limit_gib: float,
            dense_limit_gib: float, errors: bool = True) -> List[Dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in sizes:
            a = _inputs(s)
            refs: Dict[str, np.ndarray] = {}
            for method in methods:
                path = os.path.join(tmp, f"{method}-{s}.npy")
                limit = dense_limit_gib if method in DENSE else limit_gib
                row = _child(method, s, reps if s <= 4096 else 1, limit, path)
                if errors and "failed" not in row:
                    out = np.load(path)
                    target = {"local": "band", "dense_band": "band",
                              "linformer": "linformer"}.get(method, "full")
                    for kind in {target, "full"}:
                        if kind not in refs:
                            refs[kind] = reference(a, kind)
                    row["error_own"] = _relative_error(out, refs[target])
                    row["error_full"] = _relative_error(out, refs["full"])
                print(json.dumps(row), flush=True)
                rows.append(row)
    return rows


def performer_error_by_features(s: int, features: List[int], draws: int,
                                qk_std: float = 1.0) -> Dict[int, float]:
    """Mean relative error of performer_attention against exact softmax attention (float64)
    at sequence length ``s``, averaged over ``draws`` draws of the features; q and k have
    entries of standard deviation ``qk_std`` (the estimator's variance grows like
    exp(|q'|^2 + |k'|^2), so their size matters more than m)."""
    a = _inputs(s)
    a["q"], a["k"] = a["q"] * qk_std, a["k"] * qk_std
    q, k, v = (Tensor(a[n].astype(np.float64)) for n in "qkv")
    exact = reference(a, "full")
    result = {}
    for m in features:
        errs = [_relative_error(F.performer_attention(q, k, v, m, generator=np.random.
                                                      default_rng(seed)).numpy(), exact)
                for seed in range(draws)]
        result[m] = float(np.mean(errs))
        print(json.dumps({"num_features": m, "S": s, "qk_std": qk_std, "error": result[m]}),
              flush=True)
    return result


def table(rows: List[Dict[str, Any]]) -> str:
    lines = ["| method | S | peak MiB | time (s) | error vs own target | error vs full |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['method']} | {r['S']} | {r['failed']} | | | |")
            continue
        own = f"{r['error_own']:.1e}" if "error_own" in r else ""
        full = f"{r['error_full']:.2f}" if "error_full" in r else ""
        lines.append(f"| {r['method']} | {r['S']} | {r['peak_mib']:.1f} | {r['time_s']:.3f} | "
                     f"{own} | {full} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="S = 256: a smoke run (seconds)")
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    p.add_argument("--methods", nargs="+", default=list(METHODS),
                   choices=list(METHODS) + ["dense_band"])
    p.add_argument("--headline", action="store_true",
                   help="local against dense masked attention at S=16384 (W=128, h=4)")
    p.add_argument("--features", action="store_true",
                   help="Performer error against exact attention for 16..1024 features")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--limit-gib", type=float, default=4.0)
    p.add_argument("--dense-limit-gib", type=float, default=20.0)
    p.add_argument("--json", help="write the rows to this file")
    p.add_argument("--child", nargs=2, metavar=("METHOD", "S"), help=argparse.SUPPRESS)
    p.add_argument("--out", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(run_case(args.child[0], int(args.child[1]), args.reps, args.out)))
        return 0
    results: Dict[str, Any] = {}
    if args.features:
        sizes = [128] if args.tiny else [1024]
        feats = [16, 64] if args.tiny else [16, 32, 64, 128, 256, 512, 1024]
        results["performer_error"] = {
            str(std): performer_error_by_features(sizes[0], feats, 1 if args.tiny else 3, std)
            for std in (1.0, 0.5, 0.25)}
    else:
        methods, sizes = args.methods, args.sizes
        if args.headline:
            methods, sizes = ["local", "dense_band"], [16384]
        if args.tiny:
            sizes, args.limit_gib, args.dense_limit_gib = [256], 2.0, 2.0
        rows = measure(methods, sizes, args.reps, args.limit_gib, args.dense_limit_gib)
        results["rows"] = rows
        print(table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
