"""What every benchmark case shares: the ``Case`` record, FLOP counts, the agreement check
that runs before anything is timed, and small helpers (benchmarks/run.py is the runner)."""
from __future__ import annotations

import os

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from tinyattn import nn
from tinyattn.nn.torch_compat import to_torch_state_dict
from tinyattn.tensor import Tensor

# A process timing tinyattn alone (benchmarks/run.py --processes own) must never import torch:
# once torch has run, glibc's raised mmap threshold lets NumPy reuse freed memory, which a
# learner's program (tinyattn only) does not get.
if os.environ.get("TINYATTN_BENCH_SIDE") == "tinyattn":
    torch = None
else:
    try:
        import torch
    except ImportError:  # tinyattn alone
        torch = None

__all__ = ["Case", "VOCAB", "ATOL", "torch", "linear_flops", "attention_flops", "mha_flops",
           "gpt_flops", "same", "load_into_torch", "arrays", "in_sequence"]

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


def same(name: str, ours: Any, theirs: Any) -> None:
    """Refuse to time two computations that do not agree (they would not be the same work)."""
    a = ours.numpy() if isinstance(ours, Tensor) else np.asarray(ours)
    b = theirs.detach().numpy()
    if a.shape != b.shape or not np.allclose(a, b, atol=ATOL, rtol=ATOL):
        diff = float(np.abs(a - b).max()) if a.shape == b.shape else float("nan")
        raise RuntimeError(f"{name}: tinyattn and torch disagree (shapes {a.shape}, {b.shape}, "
                           f"max |diff| {diff:.3g}); the benchmark would not compare like work")


def load_into_torch(module: Any, ours: nn.Module) -> None:
    state = {k: torch.from_numpy(v) for k, v in to_torch_state_dict(ours.state_dict()).items()}
    module.load_state_dict(state)


def arrays(*shapes: Tuple[int, ...], seed: int = 0) -> List[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s, dtype=np.float32) for s in shapes]


def in_sequence(phases: List[Tuple[str, Callable[[], Any]]]) -> Callable[[], None]:
    def run() -> None:
        for _, phase in phases:
            phase()
    return run
