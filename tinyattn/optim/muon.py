"""``Muon`` (Keller Jordan, 2024) as torch 2.13's ``torch.optim.Muon`` (docs/optim.md#muon):
momentum SGD whose update, for a weight matrix, is first orthogonalised: the momentum M = U S
V^T is replaced by about U V^T, so every direction of the update gets a similar step.

For step t, gradient G of a 2-D parameter theta (A, B)::

    M <- lerp(M, G, 1 - mu)                         (M = mu M + (1 - mu) G, torch's lerp)
    N = lerp(G, M, mu) if nesterov else M
    O = NS(N): X = bf16(N) (transposed when A > B), X = X / max(||X||_F, eps), then ns_steps
        times: Gram = X X^T;  X = a X + (b Gram + c Gram Gram) X        (quintic Newton-Schulz)
    theta <- theta (1 - lr weight_decay);  theta <- theta - lr' O
    lr' = lr sqrt(max(1, A / B)) ("original", the default), 0.2 lr sqrt(max(A, B))
          ("match_rms_adamw")

The Newton-Schulz iteration runs in bfloat16, as torch's: each of its products is computed in
float32 and rounded to bfloat16 once, which is what torch's CPU kernels do, so small matrices
give torch's bits; for large ones the order of float32 sums inside the matrix products (BLAS's
blocking) can move an element by one bfloat16 unit, which the next iterations carry on.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np

from .. import backend
from ..tensor import Tensor
from .optimizer import Optimizer, ParamsT, check_hyperparameter

__all__ = ["Muon"]

DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
_ADJUST_LR_FNS = (None, "original", "match_rms_adamw")


def _round_to_bfloat16(a: Any) -> Any:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32: the top
    16 bits of each float32, rounded on its bit pattern (works for NumPy and CuPy alike)."""
    xp = backend.get_array_module(a)
    a = xp.ascontiguousarray(a, dtype=np.float32)
    bits = a.view(np.uint32)
    rounded = (bits + (((bits >> 16) & 1) + np.uint32(0x7FFF))) & np.uint32(0xFFFF0000)
    return xp.where(xp.isnan(a), a, rounded.view(np.float32))


def zeropower_via_newtonschulz(grad: Any, ns_coefficients: Sequence[float], ns_steps: int,
                               eps: float) -> Any:
    """About U V^T for grad = U S V^T, by ns_steps quintic Newton-Schulz iterations in
    bfloat16 (values returned as float32 holding bfloat16 numbers)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    xp = backend.get_array_module(grad)
    a, b, c = (np.float32(v) for v in ns_coefficients)
    x = _round_to_bfloat16(grad.astype(np.float32))     # as torch: float64 -> float32 -> bf16
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T                                                          # (A, B) -> (B, A)
    norm = _round_to_bfloat16(xp.sqrt((x * x).sum(dtype=np.float32)))
    norm = xp.maximum(norm, _round_to_bfloat16(xp.asarray(eps, dtype=np.float32)))
    x = _round_to_bfloat16(x / norm)
    for _ in range(ns_steps):
        gram = _round_to_bfloat16(x @ x.T)                               # (r, r)
        update = _round_to_bfloat16(c * (gram @ gram) + b * gram)       # addmm(beta=b, alpha=c)
        x = _round_to_bfloat16(update @ x + a * x)                       # addmm(beta=a)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: Optional[str], shape: Tuple[int, ...]) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))              # "match_rms_adamw"


def _lerp(start: Any, end: Any, weight: float) -> Any:
    """torch's lerp, written as its kernel writes it (one formula each side of 0.5)."""
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)


class Muon(Optimizer):
    """Muon with torch's signature, checks, state (``momentum_buffer``) and arithmetic. For
    2-D parameters only (hidden layers' weights): optimise biases, embeddings and the output
    layer with AdamW, as torch's documentation says."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: Tuple[float, float, float] = DEFAULT_NS_COEFFICIENTS,
                 eps: float = 1e-7, ns_steps: int = 5,
                 adjust_lr_fn: Optional[str] = None) -> None:
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                        nesterov=nesterov, ns_coefficients=ns_coefficients, eps=eps,
                        ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.shape}; optimise the other "
                                     f"parameters (biases, embeddings) with AdamW")

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        group["lr"] = check_hyperparameter("lr (learning rate)", group["lr"])
        group["momentum"] = check_hyperparameter("momentum", group["momentum"])
        group["weight_decay"] = check_hyperparameter("weight_decay", group["weight_decay"])
        if group["adjust_lr_fn"] not in _ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {group['adjust_lr_fn']} is not "
                             f"supported (use None, 'original' or 'match_rms_adamw')")
        return group

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """One update of every parameter that has a gradient; returns the closure's loss."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            lr, momentum = float(group["lr"]), group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad._data
                if grad.ndim != 2:
                    raise ValueError(f"Param gradient must be a 2D matrix (Muon updates "
                                     f"matrices only), got shape {tuple(grad.shape)}")
                state = self.state.setdefault(p, {})
                if "momentum_buffer" not in state:
                    # a Tensor, as torch's state holds (sharing the array updated below)
                    state["momentum_buffer"] = Tensor._wrap(
                        backend.get_array_module(grad).zeros_like(grad))
                buf = state["momentum_buffer"]._data
                buf[...] = _lerp(buf, grad, 1 - momentum)
                update = _lerp(grad, buf, momentum) if group["nesterov"] else buf
                ortho = zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                   group["ns_steps"], group["eps"])
                step_size = _adjusted_lr(lr, group["adjust_lr_fn"], p.shape)
                p._data *= 1 - lr * group["weight_decay"]
                p._data += (-step_size) * ortho.astype(p._data.dtype)
                p._bump_version()
        return loss
