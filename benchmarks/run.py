"""tinyattn beside PyTorch on the CPU: the same work, timed in one process (docs/benchmarks.md).

    PYTHONPATH=. python benchmarks/run.py                      # every case; rewrites the doc
    PYTHONPATH=. python benchmarks/run.py --quick --no-write   # a fast look, printed only
    PYTHONPATH=. python benchmarks/run.py --tiny               # every case still runs (smoke)
    PYTHONPATH=. python benchmarks/run.py --cases mha gpt_tiny --reps 15 --threads 2

(from the repository root; ``PYTHONPATH=.`` is not needed after ``pip install -e .``).

Each case builds the same model in tinyattn and in torch, with the same weights, and checks
that both give the same output before timing anything. Both are warmed up, then timed in
alternation, A B, B A, A B, ..., so a change in the machine's load hits both alike. A case's
time is the median over ``--reps`` repetitions; its ratio is the median of the per-repetition
ratios tinyattn / torch (paired, so load that hits one repetition hits both sides of its
ratio), shown with the quartiles of those ratios (the middle half of the repetitions).
Without torch installed only tinyattn is timed. Both libraries run with the same number of
threads (``--threads``, default 1: NumPy's BLAS through threadpoolctl, torch through
``torch.set_num_threads``); docs/benchmarks.md says why 1. With one thread the clock is the
process's CPU time (``--clock cpu``), which leaves out the time other processes hold the core;
with more threads it is wall time (``--clock wall``).

FLOPs count the matrix multiplies of the dense computation, forward and backward (2 M N K
each; elementwise work is not counted). A case's share is its FLOP rate over the machine's
float32 matmul rate, measured by the ``matmul`` case (the better of tinyattn and torch).
The results table, the command, the date and the machine replace the text between
``<!-- bench:start -->`` and ``<!-- bench:end -->`` in docs/benchmarks.md (temp file, then
``os.replace``, so an interrupted run never leaves half a file).
"""
from __future__ import annotations

import argparse
import datetime
import gc
import math
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

import tinyattn
import tinyattn.functional as F
from tinyattn import nn, optim
from tinyattn.nn.torch_compat import to_torch_state_dict
from tinyattn.tensor import Tensor

try:
    import torch
except ImportError:  # tinyattn alone
    torch = None

try:
    import threadpoolctl
except ImportError:
    threadpoolctl = None

__all__ = ["main", "CASES"]

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "benchmarks.md")
START, END = "<!-- bench:start -->", "<!-- bench:end -->"
VOCAB = 65          # a character-level vocabulary, as in the toy training script
ATOL = 2e-4         # float32 agreement between the two libraries before timing


@dataclass
class Case:
    """One benchmark: two callables doing the same work, its FLOPs and its target."""

    name: str
    label: str
    tinyattn: Callable[[], Any]
    torch: Optional[Callable[[], Any]]
    flops: float = 0.0               # matmul FLOPs of one call (0: not counted)
    target: Optional[float] = None   # the highest acceptable ratio tinyattn / torch
    inner: int = 1                   # calls per timed repetition (small ops need many)
    phases: Optional[Dict[str, List[Tuple[str, Callable[[], Any]]]]] = None  # --phases


# ---------------------------------------------------------------- FLOP counts
def linear_flops(n: int, d_in: int, d_out: int) -> float:
    """x (n, d_in) @ W^T, then dW and dx in the backward: three (n, d_in, d_out) products."""
    return 3 * 2.0 * n * d_in * d_out


def attention_flops(bh: int, s_q: int, s_k: int, d_k: int) -> float:
    """q k^T and P v forward; dv, dP, dq, dk backward: six (S_q, S_k, d_k) products per head."""
    return 6 * 2.0 * bh * s_q * s_k * d_k


def mha_flops(b: int, s: int, d: int, h: int) -> float:
    return 4 * linear_flops(b * s, d, d) + attention_flops(b * h, s, s, d // h)


def gpt_flops(b: int, s: int, d: int, h: int, layers: int, d_ff: int) -> float:
    block = mha_flops(b, s, d, h) + 2 * linear_flops(b * s, d, d_ff)
    return layers * block + linear_flops(b * s, d, VOCAB)


# ---------------------------------------------------------------- helpers
def _same(name: str, ours: Any, theirs: Any) -> None:
    """Refuse to time two computations that do not agree (they would not be the same work)."""
    a = ours.numpy() if isinstance(ours, Tensor) else np.asarray(ours)
    b = theirs.detach().numpy()
    if a.shape != b.shape or not np.allclose(a, b, atol=ATOL, rtol=ATOL):
        diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("nan")
        raise RuntimeError(f"{name}: tinyattn and torch disagree (shapes {a.shape}, {b.shape}, "
                           f"max |diff| {diff:.3g}); the benchmark would not compare like work")


def _load_into_torch(module: Any, ours: nn.Module) -> None:
    state = {k: torch.from_numpy(v) for k, v in to_torch_state_dict(ours.state_dict()).items()}
    module.load_state_dict(state)


def _arrays(*shapes: Tuple[int, ...], seed: int = 0) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s, dtype=np.float32) for s in shapes]


# ---------------------------------------------------------------- cases
def case_matmul(n: int = 1024) -> Case:
    a, b = _arrays((n, n), (n, n))
    ta_a, ta_b = Tensor(a), Tensor(b)
    run_torch = None
    if torch is not None:
        t_a, t_b = torch.from_numpy(a), torch.from_numpy(b)
        _same("matmul", ta_a @ ta_b, t_a @ t_b)
        run_torch = lambda: t_a @ t_b  # noqa: E731
    return Case("matmul", f"float32 matmul ({n}, {n}) @ ({n}, {n}), forward (the ceiling)",
                lambda: ta_a @ ta_b, run_torch, flops=2.0 * n ** 3)


def case_mha(b: int = 8, s: int = 256, d: int = 512, h: int = 8) -> Case:
    x, g = _arrays((b, s, d), (b, s, d))
    tinyattn.manual_seed(0)
    ours = nn.MultiHeadAttention(d, h)

    def run_ours() -> Tensor:
        xt = Tensor(x, requires_grad=True)
        out, _ = ours(xt, need_weights=False)            # self-attention, (B, S, D)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        theirs = torch.nn.MultiheadAttention(d, h, batch_first=True)
        _load_into_torch(theirs, ours)
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)

        def torch_side() -> Any:
            xt = x_t.clone().requires_grad_(True)
            out, _ = theirs(xt, xt, xt, need_weights=False)
            out.backward(g_t)
            return out
        run_torch = torch_side
        _same("mha", run_ours(), run_torch())
    return Case("mha", f"MultiHeadAttention fwd+bwd, B={b} S={s} D={d} h={h}", run_ours,
                run_torch, flops=mha_flops(b, s, d, h), target=0.9)


def case_encoder(b: int = 8, s: int = 256, d: int = 512, h: int = 8, d_ff: int = 2048) -> Case:
    x, g = _arrays((b, s, d), (b, s, d), seed=1)
    tinyattn.manual_seed(0)
    ours = nn.TransformerEncoderLayer(d, h, dim_feedforward=d_ff, dropout=0.0,
                                      batch_first=True)   # (B, S, D) on both sides

    def run_ours() -> Tensor:
        xt = Tensor(x, requires_grad=True)
        out = ours(xt)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        theirs = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=d_ff, dropout=0.0,
                                                  batch_first=True)
        _load_into_torch(theirs, ours)
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)

        def torch_side() -> Any:
            xt = x_t.clone().requires_grad_(True)
            out = theirs(xt)
            out.backward(g_t)
            return out
        run_torch = torch_side
        _same("encoder", run_ours(), run_torch())
    flops = mha_flops(b, s, d, h) + 2 * linear_flops(b * s, d, d_ff)
    return Case("encoder", f"TransformerEncoderLayer fwd+bwd, B={b} S={s} D={d} h={h} "
                f"d_ff={d_ff}", run_ours, run_torch, flops=flops)


def _torch_gpt(config: nn.GPTConfig) -> Any:
    """The same GPT in torch, written as a torch user would (nanoGPT style): packed q/k/v
    projection, F.scaled_dot_product_attention(is_causal=True), tied lm_head."""
    tnn, tF = torch.nn, torch.nn.functional
    d, h = config.d_model, config.n_head

    class Attention(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.in_proj = tnn.Linear(d, 3 * d)
            self.out_proj = tnn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            b, s, _ = x.shape
            q, k, v = self.in_proj(x).split(d, dim=2)                   # 3 x (B, S, D)
            q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
            y = tF.scaled_dot_product_attention(q, k, v, is_causal=True)   # (B, h, S, d_k)
            return self.out_proj(y.transpose(1, 2).reshape(b, s, d))

    class Block(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.attn = tnn.LayerNorm(d), Attention()
            self.ln2 = tnn.LayerNorm(d)
            self.mlp = tnn.Module()
            self.mlp.linear1, self.mlp.linear2 = tnn.Linear(d, 4 * d), tnn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp.linear2(tF.gelu(self.mlp.linear1(self.ln2(x))))

    class GPT(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_emb = tnn.Embedding(config.vocab_size, d)
            self.pos_emb = tnn.Module()
            self.pos_emb.weight = tnn.Parameter(torch.zeros(config.block_size, d))
            self.blocks = tnn.ModuleList([Block() for _ in range(config.n_layer)])
            self.ln_f = tnn.LayerNorm(d)
            self.lm_head = tnn.Linear(d, config.vocab_size, bias=False)
            self.lm_head.weight = self.tok_emb.weight                  # tied, as tinyattn's

        def forward(self, idx: Any, targets: Any) -> Any:
            x = self.tok_emb(idx) + self.pos_emb.weight[: idx.shape[1]]
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return tF.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def case_gpt(name: str, d: int, layers: int, s: int, b: int, h: int) -> Case:
    config = nn.GPTConfig(vocab_size=VOCAB, block_size=s, n_layer=layers, n_head=h, d_model=d)
    tinyattn.manual_seed(0)
    ours = nn.GPT(config)
    opt = optim.AdamW(ours.parameters(), lr=1e-3)
    rng = np.random.default_rng(2)
    idx, targets = rng.integers(0, VOCAB, size=(2, b, s))
    loss: Dict[str, Any] = {}          # each step's loss, from its forward to its backward
    phases = {"tinyattn": [
        ("forward", lambda: loss.update(ours=ours(idx, targets)[1])),
        ("backward", lambda: loss["ours"].backward()),
        ("AdamW step", lambda: (opt.step(), opt.zero_grad())),
    ]}
    if torch is not None:
        theirs = _torch_gpt(config)
        state = to_torch_state_dict(ours.state_dict())
        state = {k.replace("attn.in_proj_", "attn.in_proj."): torch.from_numpy(v)
                 for k, v in state.items()}
        state["lm_head.weight"] = state["tok_emb.weight"]
        theirs.load_state_dict(state)
        t_opt = torch.optim.AdamW(theirs.parameters(), lr=1e-3)
        idx_t, targets_t = torch.from_numpy(idx), torch.from_numpy(targets)
        phases["torch"] = [
            ("forward", lambda: loss.update(torch=theirs(idx_t, targets_t))),
            ("backward", lambda: loss["torch"].backward()),
            ("AdamW step", lambda: (t_opt.step(), t_opt.zero_grad(set_to_none=True))),
        ]
    run_ours, run_torch = (_in_sequence(phases[side]) if side in phases else None
                           for side in ("tinyattn", "torch"))
    if run_torch is not None:
        run_ours(), run_torch()
        _same(name, loss["ours"], loss["torch"])   # the first step's loss, from equal weights
    return Case(name, f"GPT training step (fwd, bwd, AdamW), D={d} layers={layers} S={s} "
                f"B={b} h={h} V={VOCAB}", run_ours, run_torch,
                flops=gpt_flops(b, s, d, h, layers, 4 * d), target=1.0, phases=phases)


def _in_sequence(phases: List[Tuple[str, Callable[[], Any]]]) -> Callable[[], None]:
    def run() -> None:
        for _, phase in phases:
            phase()
    return run


def case_softmax(shape: Tuple[int, ...] = (8, 8, 256, 256)) -> Case:
    x, g = _arrays(shape, shape, seed=3)

    def run_ours() -> Tensor:
        out = F.softmax(Tensor(x, requires_grad=True), dim=-1)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)

        def torch_side() -> Any:
            out = torch.softmax(x_t.clone().requires_grad_(True), dim=-1)
            out.backward(g_t)
            return out
        run_torch = torch_side
        _same("softmax", run_ours(), run_torch())
    return Case("softmax", f"softmax fwd+bwd over the last dim of {shape}", run_ours, run_torch)


def case_layer_norm(shape: Tuple[int, ...] = (8, 256, 512)) -> Case:
    x, g = _arrays(shape, shape, seed=4)
    w, bias = _arrays(shape[-1:], shape[-1:], seed=5)
    weight_ours, bias_ours = Tensor(w, requires_grad=True), Tensor(bias, requires_grad=True)

    def run_ours() -> Tensor:
        weight_ours.grad = bias_ours.grad = None
        out = F.layer_norm(Tensor(x, requires_grad=True), shape[-1:], weight_ours, bias_ours)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)
        w_t = torch.from_numpy(w).requires_grad_(True)
        b_t = torch.from_numpy(bias).requires_grad_(True)

        def torch_side() -> Any:
            w_t.grad = b_t.grad = None
            out = torch.nn.functional.layer_norm(x_t.clone().requires_grad_(True), shape[-1:],
                                                 w_t, b_t)
            out.backward(g_t)
            return out
        run_torch = torch_side
        _same("layer_norm", run_ours(), run_torch())
    return Case("layer_norm", f"layer_norm fwd+bwd (weight, bias) over the last dim of {shape}",
                run_ours, run_torch)


def case_small_op(backward: bool, inner: int) -> Case:
    """One multiply of two 4-element tensors that require grad: the cost of an op's Python
    and graph bookkeeping, which dominates small models."""
    a, b, g = _arrays((4,), (4,), (4,), seed=6)
    ta_a, ta_b = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)

    def run_ours() -> Tensor:
        out = ta_a * ta_b
        if backward:
            out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        t_a = torch.from_numpy(a).requires_grad_(True)
        t_b = torch.from_numpy(b).requires_grad_(True)
        g_t = torch.from_numpy(g)

        def torch_side() -> Any:
            out = t_a * t_b
            if backward:
                out.backward(g_t)
            return out
        run_torch = torch_side
        _same("small_op", run_ours(), run_torch())
    name = "small_op_fwd_bwd" if backward else "small_op_fwd"
    what = "forward + backward" if backward else "forward (graph recorded)"
    return Case(name, f"one small op, a * b on 4 elements, {what}", run_ours, run_torch,
                target=1.0, inner=inner)


def build_cases(quick: bool, tiny: bool = False) -> Dict[str, Callable[[], Case]]:
    """Case builders by name, in table order (built lazily: --cases builds only those).
    ``tiny``: every case at a toy size, so a smoke test runs all of them in seconds."""
    inner = 2 if tiny else 200 if quick else 2000
    if tiny:
        return {
            "matmul": lambda: case_matmul(n=16),
            "mha": lambda: case_mha(b=2, s=8, d=16, h=2),
            "encoder": lambda: case_encoder(b=2, s=8, d=16, h=2, d_ff=32),
            "gpt_tiny": lambda: case_gpt("gpt_tiny", d=16, layers=1, s=8, b=2, h=2),
            "gpt_medium": lambda: case_gpt("gpt_medium", d=16, layers=2, s=8, b=2, h=2),
            "softmax": lambda: case_softmax((2, 2, 8, 8)),
            "layer_norm": lambda: case_layer_norm((2, 8, 16)),
            "small_op_fwd": lambda: case_small_op(False, inner),
            "small_op_fwd_bwd": lambda: case_small_op(True, inner),
        }
    return {
        "matmul": case_matmul,
        "mha": case_mha,
        "encoder": case_encoder,
        "gpt_tiny": lambda: case_gpt("gpt_tiny", d=64, layers=2, s=32, b=16, h=4),
        "gpt_medium": lambda: case_gpt("gpt_medium", d=256, layers=4, s=128, b=8, h=8),
        "softmax": case_softmax,
        "layer_norm": case_layer_norm,
        "small_op_fwd": lambda: case_small_op(False, inner),
        "small_op_fwd_bwd": lambda: case_small_op(True, inner),
    }


CASES = list(build_cases(quick=False))


# ---------------------------------------------------------------- timing
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def time_case(case: Case, reps: int, warmup: int, clock: str) -> Dict[str, List[float]]:
    """Seconds per call for each side, ``reps`` times, sides alternating A B / B A."""
    now = CLOCKS[clock]
    sides = [("tinyattn", case.tinyattn)]
    if case.torch is not None:
        sides.append(("torch", case.torch))
    for _, run in sides:
        for _ in range(warmup * case.inner):
            run()
    times: Dict[str, List[float]] = {name: [] for name, _ in sides}
    for rep in range(reps):
        for name, run in (sides if rep % 2 == 0 else sides[::-1]):
            gc.collect()
            start = now()
            for _ in range(case.inner):
                run()
            times[name].append((now() - start) / case.inner)
    return times


def time_phases(case: Case, reps: int, warmup: int, clock: str) -> Dict[str, Dict[str, float]]:
    """Median seconds of each phase of a step (forward, backward, optimizer) per side."""
    now = CLOCKS[clock]
    sides = list(case.phases.items())
    for _, phases in sides:
        for _ in range(warmup):
            _in_sequence(phases)()
    times: Dict[str, Dict[str, List[float]]] = {side: {} for side, _ in sides}
    for rep in range(reps):
        for side, phases in (sides if rep % 2 == 0 else sides[::-1]):
            gc.collect()
            for phase_name, phase in phases:
                start = now()
                phase()
                times[side].setdefault(phase_name, []).append(now() - start)
    return {side: {p: statistics.median(t) for p, t in by_phase.items()}
            for side, by_phase in times.items()}


def phase_table(name: str, medians: Dict[str, Dict[str, float]]) -> str:
    rows = [f"| `{name}` phase | tinyattn | torch | ratio |", "|---|---:|---:|---:|"]
    for phase, ours in medians["tinyattn"].items():
        theirs = medians.get("torch", {}).get(phase)
        ratio = "-" if theirs is None else f"{ours / theirs:.2f}x"
        rows.append(f"| {phase} | {_fmt_time(ours)} | {_fmt_time(theirs)} | {ratio} |")
    return "\n".join(rows)


@dataclass
class Result:
    case: Case
    ours: float                    # median seconds per call
    theirs: Optional[float]
    ratio: Optional[float]         # median of paired ratios
    spread: Tuple[float, float] = (math.nan, math.nan)  # their quartiles (the middle half)


def summarize(case: Case, times: Dict[str, List[float]]) -> Result:
    ours = statistics.median(times["tinyattn"])
    if "torch" not in times:
        return Result(case, ours, None, None)
    pairs = [a / b for a, b in zip(times["tinyattn"], times["torch"])]
    spread = (math.nan, math.nan)
    if len(pairs) >= 2:
        low, _, high = statistics.quantiles(pairs, n=4)
        spread = (low, high)
    return Result(case, ours, statistics.median(times["torch"]), statistics.median(pairs),
                  spread)


# ---------------------------------------------------------------- threads and machine
def set_threads(n: int) -> Any:
    """The same thread count for NumPy's BLAS and torch; returns the threadpoolctl handle
    (keep it alive while timing)."""
    handle = None
    if threadpoolctl is not None:
        handle = threadpoolctl.threadpool_limits(limits=n, user_api="blas")
    if torch is not None:
        torch.set_num_threads(n)
    return handle


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blas_lines() -> List[str]:
    if threadpoolctl is None:
        return ["NumPy BLAS threads: unknown (threadpoolctl is not installed)"]
    lines = []
    for info in threadpoolctl.threadpool_info():
        if info.get("user_api") == "blas":
            lines.append(f"{info.get('internal_api')} {info.get('version')} "
                         f"({info.get('architecture')} kernels, "
                         f"{info.get('threading_layer')}), {info.get('num_threads')} threads, "
                         f"{os.path.basename(info.get('filepath', ''))}")
    return lines or ["no BLAS found by threadpoolctl"]


def _torch_line() -> str:
    if torch is None:
        return "not installed: tinyattn timed alone"
    config = torch.__config__.show()
    blas = next((part.split("=", 1)[1] for part in config.replace(",", " ").split()
                 if part.startswith("BLAS_INFO=")), "?")
    capability = next((line.split(":", 1)[1].strip() for line in config.splitlines()
                       if "CPU capability usage" in line), "?")
    return (f"{torch.__version__}, BLAS {blas}, CPU capability {capability}, "
            f"{torch.get_num_threads()} intra-op threads")


def machine_lines() -> List[str]:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "?"
    lines = [
        f"CPU: {_cpu_model()}, {os.cpu_count()} logical cores ({usable} usable by this "
        f"process)",
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}",
        f"NumPy {np.__version__}; BLAS: " + "; ".join(_blas_lines()),
        f"torch: {_torch_line()}",
    ]
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE",
                                      "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                      "MKL_NUM_THREADS") if k in os.environ}
    lines.append("threading environment: " + (", ".join(f"{k}={v}" for k, v in env.items())
                                              if env else "none of OPENBLAS_*, OMP_*, MKL_* "
                                              "set"))
    return lines


# ---------------------------------------------------------------- report
def _fmt_time(seconds: Optional[float]) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} us"


def _rate(flops: float, seconds: Optional[float], ceiling: Optional[float]) -> str:
    if not flops or seconds is None:
        return "-"
    rate = flops / seconds / 1e9
    return f"{rate:.1f}" + (f" ({100 * rate / ceiling:.0f}%)" if ceiling else "")


def table(results: Sequence[Result]) -> Tuple[str, List[str]]:
    """The Markdown table and one verdict line per case that has a target."""
    ceiling = None
    for r in results:
        if r.case.name == "matmul":
            best = r.ours if r.theirs is None else min(r.ours, r.theirs)
            ceiling = r.case.flops / best / 1e9
    rows = ["| case | tinyattn | torch | ratio (quartiles) | target | GFLOP | tinyattn GFLOP/s "
            "(% of ceiling) | torch GFLOP/s (% of ceiling) |",
            "|---|---:|---:|---:|---|---:|---:|---:|"]
    verdicts = []
    for r in results:
        c = r.case
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}x"
        if r.ratio is not None and not math.isnan(r.spread[0]):
            ratio += f" ({r.spread[0]:.2f}-{r.spread[1]:.2f})"
        target = "-"
        if c.target is not None and r.ratio is not None:
            met = r.ratio <= c.target
            target = f"<= {c.target:.1f}x: {'met' if met else 'NOT met'}"
            verdicts.append(f"- {c.name}: {r.ratio:.2f}x against a target of <= "
                            f"{c.target:.1f}x: {'met' if met else 'not met'}")
        gflop = f"{c.flops / 1e9:.2f}" if c.flops else "-"
        rows.append(f"| {c.name} | {_fmt_time(r.ours)} | {_fmt_time(r.theirs)} | {ratio} | "
                    f"{target} | {gflop} | {_rate(c.flops, r.ours, ceiling)} | "
                    f"{_rate(c.flops, r.theirs, ceiling)} |")
    if ceiling:
        rows.append("")
        rows.append(f"Ceiling: {ceiling:.1f} GFLOP/s, the float32 matmul rate of the `matmul` "
                    f"row (the faster side).")
    return "\n".join(rows), verdicts


CLOCK_TEXT = {"cpu": "times in process CPU time (time.process_time: all the process's threads, "
                     "not the time spent waiting for a core)",
              "wall": "times in wall-clock time (time.perf_counter)"}


def report(results: Sequence[Result], args: argparse.Namespace, command: str,
           load: Tuple[Tuple[float, ...], Tuple[float, ...]], started: str) -> str:
    body, verdicts = table(results)
    case_lines = [f"- `{r.case.name}`: {r.case.label}" for r in results]
    load_text = " / ".join(f"{a:.2f}" for a in load[0]) + " before, " + \
        " / ".join(f"{a:.2f}" for a in load[1]) + " after (1 / 5 / 15 min)"
    parts = [
        f"Measured {started} with", "", "```", command, "```", "",
        f"{args.reps} repetitions after {args.warmup} warm-up runs per side, "
        f"{args.threads} thread(s) for both libraries, {CLOCK_TEXT[args.clock]}. "
        f"Load average: {load_text}.", "",
        "Machine:", "", *[f"- {line}" for line in machine_lines()], "",
        "Cases:", "", *case_lines, "", body, "",
    ]
    if verdicts:
        parts += ["Targets (ratio tinyattn / torch from this run):", "", *verdicts, ""]
    return "\n".join(parts)


SKELETON = f"""# Benchmarks: tinyattn beside PyTorch

Produced by `benchmarks/run.py` (its docstring says how each case is timed).

{START}
{END}
"""


def write_doc(path: str, generated: str) -> None:
    """Replace the generated block of ``path`` (creating the file if needed), atomically."""
    text = SKELETON
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
    if START not in text or END not in text:
        raise RuntimeError(f"{path} has no {START} ... {END} block to replace; add the two "
                           f"marker lines where the results should go")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new_text = f"{head}{START}\n{generated}\n{END}{tail}"
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".benchmarks-", suffix=".md", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new_text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------- main
def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=None,
                        help="timed repetitions per side (default 9, or 3 with --quick)")
    parser.add_argument("--warmup", type=int, default=None,
                        help="untimed runs per side first (default 2, or 1 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repetitions and small-op calls, for a fast look")
    parser.add_argument("--tiny", action="store_true",
                        help="every case at a toy size, 1 repetition: does each case still "
                             "run (a smoke test, not a measurement; implies --no-write)")
    parser.add_argument("--cases", nargs="+", choices=CASES, metavar="CASE",
                        help=f"run only these, from: {', '.join(CASES)}")
    parser.add_argument("--threads", type=int, default=1,
                        help="threads for NumPy's BLAS and for torch (default 1)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default=None,
                        help="cpu: this process's CPU time (time spent waiting for a core "
                             "shared with other processes is not counted; the default with "
                             "--threads 1); wall: elapsed time (the default with more "
                             "threads, whose CPU times would add up)")
    parser.add_argument("--phases", action="store_true",
                        help="also time the forward, backward and optimizer step of the GPT "
                             "cases separately")
    parser.add_argument("--no-write", action="store_true",
                        help="print the table only; leave docs/benchmarks.md alone")
    parser.add_argument("--output", default=DOC, help="the Markdown file to update")
    args = parser.parse_args(argv)
    if args.clock is None:
        args.clock = "cpu" if args.threads == 1 else "wall"
    if args.tiny:
        args.no_write = True
    if args.reps is None:
        args.reps = 1 if args.tiny else 3 if args.quick else 9
    if args.warmup is None:
        args.warmup = 0 if args.tiny else 1 if args.quick else 2
    if args.reps < 1 or args.warmup < 0 or args.threads < 1:
        parser.error("--reps and --threads must be at least 1, --warmup at least 0")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    command = "PYTHONPATH=. python " + shlex.join(
        [os.path.relpath(sys.argv[0])] + list(sys.argv[1:] if argv is None else argv))
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    args.blas_limits = set_threads(args.threads)  # the limit holds while this lives
    builders = build_cases(args.quick, args.tiny)
    names = args.cases or list(builders)
    load_before = os.getloadavg()
    results, phase_tables = [], []
    for name in [n for n in builders if n in names]:
        case = builders[name]()
        result = summarize(case, time_case(case, args.reps, args.warmup, args.clock))
        results.append(result)
        ratio = "" if result.ratio is None else f"  ratio {result.ratio:.2f}x"
        print(f"{name:18s} tinyattn {_fmt_time(result.ours):>10s}  torch "
              f"{_fmt_time(result.theirs):>10s}{ratio}", flush=True)
        if args.phases and case.phases:
            medians = time_phases(case, args.reps, args.warmup, args.clock)
            phase_tables.append(phase_table(name, medians))
            print(phase_tables[-1], flush=True)
    generated = report(results, args, command, (load_before, os.getloadavg()), started)
    if phase_tables:
        generated += "\nThe GPT steps by phase (medians of the same repetitions count):\n\n" + \
            "\n\n".join(phase_tables) + "\n"
    print()
    print(generated)
    if not args.no_write:
        write_doc(args.output, generated)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
