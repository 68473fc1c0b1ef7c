"""Exercise 03, batched matrix product: the backward of a @ b.

Task
    Fill in matmul_backward: given grad (..., M, N) and the cache (a, b), return (da, db).

Shapes
    a (..., M, K) @ b (..., K, N) -> out (..., M, N). The batch dims (...) broadcast:
    (2, 3, 4) @ (4, 2) uses the one b for both batch elements.

Hints (read docs/derivations.md#matmul)
    1. Write out[m, n] = sum_k a[m, k] b[k, n] and differentiate by a[m, k]: which
       entries of grad and of b meet? Write the result as a matrix product.
    2. Let the shapes guide you: da must be (M, K) and db (K, N). np.swapaxes(b, -1, -2)
       transposes the last two axes of a batched array.
    3. Batch dims that broadcast: the copies' gradients add up. Your unbroadcast from
       exercise 01 does it.

Check
    python -m tinyattn.exercises check matmul --path <your folder>
"""

import numpy as np  # noqa: F401 - for your backward


def matmul_forward(a, b):
    """out = a @ b: a (..., M, K) @ b (..., K, N) -> (..., M, N); batch dims broadcast.
    Given; do not change."""
    out = a @ b                                 # (..., M, K) @ (..., K, N) -> (..., M, N)
    return out, (a, b)


def matmul_backward(grad, cache):
    """Return (da, db): da of a's shape, db of b's shape."""
    a, b = cache
    # Your code here (delete the raise).
    raise NotImplementedError("matmul_backward")
