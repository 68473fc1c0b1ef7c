"""Exercise 03, batched matrix product: reference solution for matmul_backward.

Derivation (docs/derivations.md#matmul)
    out[m, n] = sum_k a[m, k] b[k, n], so d out[m, n] / d a[m, k] = b[k, n] and
    da[m, k] = sum_n grad[m, n] b[k, n]:  da = grad @ b^T   (M, N) @ (N, K) -> (M, K).
    Likewise d out[m, n] / d b[k, n] = a[m, k]:  db = a^T @ grad   (K, M) @ (M, N) -> (K, N).
    Check the shapes: each gradient has its input's shape, and that fixes which operand is
    transposed and on which side.
    Batch dims (...) ride along unchanged. When they broadcast (a (B, S, D) @ b (D, N): one
    b serves every batch element), b was copied B times: sum db over those axes
    (unbroadcast, exercise 01).
"""
import numpy as np


def matmul_forward(a, b):
    """out = a @ b: a (..., M, K) @ b (..., K, N) -> (..., M, N); batch dims broadcast.
    Given; do not change."""
    out = a @ b                                 # (..., M, K) @ (..., K, N) -> (..., M, N)
    return out, (a, b)


def unbroadcast(grad, shape):
    """Sum grad down to ``shape`` (exercise 01)."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def matmul_backward(grad, cache):
    """Return (da, db): da of a's shape, db of b's shape."""
    a, b = cache
    da = grad @ np.swapaxes(b, -1, -2)          # (..., M, N) @ (..., N, K) -> (..., M, K)
    db = np.swapaxes(a, -1, -2) @ grad          # (..., K, M) @ (..., M, N) -> (..., K, N)
    return unbroadcast(da, a.shape), unbroadcast(db, b.shape)
