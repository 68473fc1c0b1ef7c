"""Exercise 04, the linear layer x @ W^T + b.

Task
    Fill in linear_backward: given grad (..., out) and the cache (x, weight), return
    (dx, dweight, dbias).

Shapes
    x (..., in), weight (out, in) as in PyTorch, bias (out,) -> out (..., out).
    The checker tries (4, 3) rows, a (B, S, in) batch, and a single row.

Hints (read docs/derivations.md#linear)
    1. Flatten the leading dims: X = x.reshape(-1, in) is (N, in), G = grad.reshape(-1, out).
    2. Then it is exercise 03 with b = W^T. Match the shapes: dweight is (out, in).
    3. weight and bias are shared by every row: their gradients sum over rows.

Check
    python -m tinyattn.exercises check linear --path <your folder>
"""

import numpy as np  # noqa: F401 - for your backward


def linear_forward(x, weight, bias):
    """out = x @ weight.T + bias: x (..., in), weight (out, in), bias (out,) -> (..., out).
    Given; do not change."""
    out = x @ weight.T + bias                   # (..., in) @ (in, out) -> (..., out)
    return out, (x, weight)


def linear_backward(grad, cache):
    """Return (dx, dweight, dbias), of the shapes of x, weight and bias."""
    x, weight = cache
    # Your code here (delete the raise).
    raise NotImplementedError("linear_backward")
