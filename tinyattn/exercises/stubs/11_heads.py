"""Exercise 11, splitting and merging attention heads.

Task
    Fill in split_heads_backward and merge_heads_backward.

Shapes
    split_heads: (B, S, D) -> (B, h, S, d_k), d_k = D / h (reshape, then transpose).
    merge_heads: (B, h, S, d_k) -> (B, S, D) (transpose, then reshape).

Hints (read docs/derivations.md#shape-ops)
    1. Reshapes and transposes only move numbers around; the gradient moves back the same
       way. What undoes a transpose(0, 2, 1, 3)? What undoes a reshape?
    2. Undo the forward's steps in reverse order.
    3. A plain reshape to the input's shape gives the right shape and the wrong order:
       the checker knows this one.

Check
    python -m tinyattn.exercises check heads --path <your folder>
"""

import numpy as np  # noqa: F401 - for your backward


def split_heads_forward(x, num_heads):
    """(B, S, D) -> (B, h, S, d_k), d_k = D / h: head i gets features i*d_k .. (i+1)*d_k - 1.
    Given; do not change."""
    b, s, d = x.shape
    out = x.reshape(b, s, num_heads, d // num_heads)     # (B, S, D) -> (B, S, h, d_k)
    out = out.transpose(0, 2, 1, 3)                      # (B, S, h, d_k) -> (B, h, S, d_k)
    return out, (x.shape,)


def split_heads_backward(grad, cache):
    """Return dx, of x's shape (B, S, D)."""
    ((b, s, d),) = cache
    # Your code here (delete the raise).
    raise NotImplementedError("split_heads_backward")


def merge_heads_forward(x):
    """(B, h, S, d_k) -> (B, S, D), D = h * d_k: the inverse of split_heads.
    Given; do not change."""
    b, h, s, d_k = x.shape
    out = x.transpose(0, 2, 1, 3)               # (B, h, S, d_k) -> (B, S, h, d_k)
    out = out.reshape(b, s, h * d_k)            # (B, S, h, d_k) -> (B, S, D)
    return out, (x.shape,)


def merge_heads_backward(grad, cache):
    """Return dx, of x's shape (B, h, S, d_k)."""
    ((b, h, s, d_k),) = cache
    # Your code here (delete the raise).
    raise NotImplementedError("merge_heads_backward")
