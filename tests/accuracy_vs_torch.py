"""float32 accuracy of tinyattn beside torch's: each op's float32 result against a float64
reference (torch's float64 on the same float32 inputs), for tinyattn and for torch, at sizes
where accumulation matters (reductions over 10^6 elements, softmax rows of 50,000, matmuls
with K = 4096). ``python tests/accuracy_vs_torch.py`` prints the table; the test
(tests/test_promotion_accuracy.py) holds every op to at most twice torch's error.

The error is normwise: max |out32 - ref64| / max |ref64|, so an op whose outputs are all of
one size reads as a relative error. Needs torch.
"""
from __future__ import annotations

import sys
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch

import tinyattn as ta
import tinyattn.functional as F

tF = torch.nn.functional

Maker = Callable[[np.random.Generator], List[np.ndarray]]


def _normal(*shape: int, shift: float = 0.0, scale: float = 1.0) -> Maker:
    return lambda rng: [(rng.standard_normal(shape) * scale + shift).astype(np.float32)]


def _positive(*shape: int) -> Maker:
    return lambda rng: [(rng.random(shape) * 4 + 0.1).astype(np.float32)]


def _two(a: Maker, b: Maker) -> Maker:
    return lambda rng: a(rng) + b(rng)


def _logits_and_targets(n: int, classes: int) -> Maker:
    return lambda rng: [(rng.standard_normal((n, classes)) * 3).astype(np.float32),
                        rng.integers(0, classes, n)]


# name -> (tinyattn call, torch call, inputs); the calls take the framework's tensors.
CASES: Dict[str, Tuple[Callable, Callable, Maker]] = {
    "sum": (lambda x: x.sum(), lambda x: x.sum(), _normal(1_000_000, shift=1.0)),
    "sum_dim": (lambda x: x.sum(0), lambda x: x.sum(0), _normal(100_000, 8, shift=1.0)),
    "mean": (lambda x: x.mean(), lambda x: x.mean(), _normal(1_000_000, shift=1.0)),
    "var": (lambda x: x.var(), lambda x: x.var(), _normal(1_000_000, shift=3.0)),
    "std": (lambda x: x.std(0), lambda x: x.std(0), _normal(100_000, 8, shift=3.0)),
    "norm": (lambda x: x.norm(), lambda x: x.norm(), _normal(1_000_000)),
    "cumsum": (lambda x: x.cumsum(0), lambda x: x.cumsum(0), _normal(100_000, shift=1.0)),
    "prod": (lambda x: x.prod(), lambda x: x.prod(),
             lambda rng: [(1 + rng.standard_normal(1000) * 0.01).astype(np.float32)]),
    "logsumexp": (lambda x: ta.logsumexp(x, 0), lambda x: torch.logsumexp(x, 0),
                  _normal(200_000, scale=3.0)),
    "softmax": (lambda x: F.softmax(x, -1), lambda x: tF.softmax(x, -1),
                _normal(4, 50_000, scale=3.0)),
    "log_softmax": (lambda x: F.log_softmax(x, -1), lambda x: tF.log_softmax(x, -1),
                    _normal(4, 50_000, scale=3.0)),
    "cross_entropy": (F.cross_entropy, tF.cross_entropy, _logits_and_targets(256, 10_000)),
    "layer_norm": (lambda x: F.layer_norm(x, (4096,)), lambda x: tF.layer_norm(x, (4096,)),
                   _normal(16, 4096, shift=5.0)),
    "matmul": (ta.matmul, torch.matmul, _two(_normal(64, 4096), _normal(4096, 64))),
    "linear": (F.linear, tF.linear, _two(_normal(64, 4096), _normal(64, 4096))),
    "sdpa": (lambda q: F.scaled_dot_product_attention(q, q, q),
             lambda q: tF.scaled_dot_product_attention(q, q, q), _normal(1, 4, 512, 64)),
    "mse_loss": (F.mse_loss, tF.mse_loss, _two(_normal(1_000_000), _normal(1_000_000))),
    "l1_loss": (F.l1_loss, tF.l1_loss, _two(_normal(1_000_000), _normal(1_000_000))),
    "bce_with_logits": (F.binary_cross_entropy_with_logits, tF.binary_cross_entropy_with_logits,
                        _two(_normal(1_000_000), lambda rng: [rng.random(1_000_000)
                                                             .astype(np.float32)])),
    "exp": (ta.exp, torch.exp, _normal(100_000, scale=5.0)),
    "log": (ta.log, torch.log, _positive(100_000)),
    "tanh": (ta.tanh, torch.tanh, _normal(100_000, scale=3.0)),
    "sigmoid": (ta.sigmoid, torch.sigmoid, _normal(100_000, scale=5.0)),
    "gelu": (F.gelu, tF.gelu, _normal(100_000, scale=3.0)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"),
                  lambda x: tF.gelu(x, approximate="tanh"), _normal(100_000, scale=3.0)),
    "silu": (F.silu, tF.silu, _normal(100_000, scale=3.0)),
    "softplus": (F.softplus, tF.softplus, _normal(100_000, scale=5.0)),
    "sqrt": (ta.sqrt, torch.sqrt, _positive(100_000)),
    "rsqrt": (ta.rsqrt, torch.rsqrt, _positive(100_000)),
    "div": (lambda a, b: a / b, lambda a, b: a / b, _two(_normal(100_000), _positive(100_000))),
    "pow_2.5": (lambda x: x ** 2.5, lambda x: x ** 2.5, _positive(100_000)),
    "pow_3": (lambda x: x ** 3.0, lambda x: x ** 3.0, _normal(100_000, scale=3.0)),
    "pow_5": (lambda x: x ** 5, lambda x: x ** 5, _normal(100_000, scale=2.0)),
    "rpow": (lambda x: 10000.0 ** x, lambda x: 10000.0 ** x, _normal(100_000)),
    "sin": (ta.sin, torch.sin, _normal(100_000, scale=10.0)),
    "cos": (ta.cos, torch.cos, _normal(100_000, scale=10.0)),
}


def _normwise_error(out: np.ndarray, reference: np.ndarray) -> float:
    scale = max(float(np.abs(reference).max()), np.finfo(np.float64).tiny)
    return float(np.abs(out.astype(np.float64) - reference).max()) / scale


def measure(names=None, seed: int = 0) -> List[Tuple[str, float, float]]:
    """(name, tinyattn's float32 error, torch's float32 error) for each case."""
    rows = []
    for name in names or CASES:
        ours_fn, torch_fn, make = CASES[name]
        arrays = make(np.random.default_rng(seed))
        with torch.no_grad():
            reference = torch_fn(*(torch.from_numpy(a.astype(np.float64)) if a.dtype.kind == "f"
                                   else torch.from_numpy(a) for a in arrays)).numpy()
            theirs = torch_fn(*(torch.from_numpy(a) for a in arrays)).numpy()
        with ta.no_grad():
            ours = ours_fn(*(ta.tensor(a) for a in arrays)).numpy()
        assert ours.dtype == np.float32, (name, ours.dtype)
        rows.append((name, _normwise_error(ours, reference), _normwise_error(theirs, reference)))
    return rows


def main() -> int:
    print(f"{'op':<18}{'tinyattn':>12}{'torch':>12}{'ratio':>8}")
    worse = 0
    for name, ours, theirs in measure(sys.argv[1:] or None):
        ratio = ours / max(theirs, np.finfo(np.float32).eps / 4)
        worse += ratio > 2
        flag = "  > 2x" if ratio > 2 else ""
        print(f"{name:<18}{ours:>12.2e}{theirs:>12.2e}{ratio:>8.2f}{flag}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
