"""Plain versions of the backwards whose code in ops/ is optimised, written to be read.

Each function here is the formula of docs/derivations.md, line for line, in NumPy: no
``out=`` buffers, no fast paths, no in-place updates, no special cases for speed. The ops
run their optimised versions (matmul's batched-weight path, layer norm's two buffers,
attention's one score buffer, the sorted scatter-add of embedding, cross-entropy's in-place
p - q, softmax's in-place exp and one-buffer backward); derivations.md quotes the plain
version first and the optimised one beside it, and tests/test_plain_backwards.py checks,
on random and edge-case inputs, that each plain function gives what the op's backward
gives.
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np

__all__ = ["unbroadcast", "matmul_backward", "softmax", "softmax_backward",
           "layer_norm_backward",
           "attention_backward", "embedding_backward", "cross_entropy_backward",
           "normal_cdf"]


def unbroadcast(grad: np.ndarray, shape: Tuple[int, ...]) -> np.ndarray:
    """Sum grad over the axes broadcasting added or stretched, back to ``shape``."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))        # axes it lacked
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True)                    # its size-1 axes


def matmul_backward(grad: np.ndarray, a: np.ndarray, b: np.ndarray
                    ) -> Tuple[np.ndarray, np.ndarray]:
    """out = a @ b (a, b at least 2-D):  da = g b^T,  db = a^T g, each summed back to its
    input's shape over the batch axes broadcasting added."""
    da = grad @ np.swapaxes(b, -1, -2)         # (..., M, N) @ (..., N, K) -> (..., M, K)
    db = np.swapaxes(a, -1, -2) @ grad         # (..., K, M) @ (..., M, N) -> (..., K, N)
    return unbroadcast(da, a.shape), unbroadcast(db, b.shape)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x - max) / sum exp(x - max) along ``axis``; a row that is all -inf gives zeros."""
    m = x.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)       # a fully masked row: shift by 0, not -inf
    e = np.exp(x - m)
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


def softmax_backward(grad: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """y = softmax(x) along ``axis``:  dx = y * (g - sum_i g_i y_i)."""
    return y * (grad - (grad * y).sum(axis=axis, keepdims=True))


def layer_norm_backward(grad: np.ndarray, xhat: np.ndarray, rstd: np.ndarray,
                        weight: Optional[np.ndarray]) -> Tuple[np.ndarray, ...]:
    """y = xhat * w + b over the last axis, xhat = (x - mean) * rstd:
    dxhat = g * w;  dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat));
    dw = sum of g * xhat, db = sum of g, over every axis but the last."""
    dxhat = grad * weight if weight is not None else grad
    dx = rstd * (dxhat - dxhat.mean(axis=-1, keepdims=True)
                 - xhat * (dxhat * xhat).mean(axis=-1, keepdims=True))
    batch = tuple(range(grad.ndim - 1))
    return dx, (grad * xhat).sum(axis=batch), grad.sum(axis=batch)


def attention_backward(grad: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                       p: np.ndarray, scale: float) -> Tuple[np.ndarray, ...]:
    """out = P v, P = softmax(q k^T scale) (masked entries of P are 0):
    dv = P^T g;  dP = g v^T;  dS = P * (dP - rowsum(dP * P));  dq = dS k scale;
    dk = dS^T q scale."""
    dv = np.swapaxes(p, -1, -2) @ grad                          # (.., S_k, S_q) @ (.., d_v)
    dp = grad @ np.swapaxes(v, -1, -2)                          # (.., S_q, d_v) @ (.., S_k)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))        # softmax's backward
    dq = ds @ k * scale                                         # (.., S_q, S_k) @ (.., d_k)
    dk = np.swapaxes(ds, -1, -2) @ q * scale                    # (.., S_k, S_q) @ (.., d_k)
    return dq, dk, dv


def embedding_backward(grad: np.ndarray, ids: np.ndarray, vocab: int) -> np.ndarray:
    """out[n] = W[ids[n]]:  dW[v] = the sum of the rows of g whose id is v (np.add.at adds
    every row, repeated ids included; dW[ids] += g would keep one of them)."""
    dweight = np.zeros((vocab, grad.shape[-1]), dtype=grad.dtype)
    np.add.at(dweight, ids.reshape(-1), grad.reshape(-1, grad.shape[-1]))
    return dweight


def cross_entropy_backward(grad: float, logits: np.ndarray, target: np.ndarray,
                           ignore_index: int = -100, label_smoothing: float = 0.0
                           ) -> np.ndarray:
    """The mean over the counted rows of -sum_c q_c log p_c:  dlogits = (p - q) * g / count
    for a counted row, 0 for a row whose target is ignore_index."""
    n, classes = logits.shape
    p = softmax(logits, axis=-1)
    counted = target != ignore_index
    q = np.full((n, classes), label_smoothing / classes)
    q[np.arange(n)[counted], target[counted]] += 1.0 - label_smoothing
    count = max(int(counted.sum()), 1)
    return np.where(counted[:, None], (p - q) * grad / count, 0.0)


def normal_cdf(x: np.ndarray) -> np.ndarray:
    """Phi(x) = (1 + erf(x / sqrt(2))) / 2, one element at a time with math.erf (exact to
    round-off; the op computes it faster: SciPy's erf in float64, a polynomial in float32)."""
    return np.vectorize(lambda t: 0.5 * (1.0 + math.erf(t / math.sqrt(2.0))),
                        otypes=[np.float64])(x)
