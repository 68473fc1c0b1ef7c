"""Exercise 04, linear layer: reference solution for linear_backward.

Derivation (docs/derivations.md#linear)
    out = x @ W^T + b with W of shape (out, in), as in PyTorch. Flatten the leading dims:
    X (N, in), G (N, out), N = number of rows. Then out = X W^T + b and, as for matmul:
        dX = G @ W          (N, out) @ (out, in) -> (N, in)
        dW = G^T @ X        (out, N) @ (N, in)   -> (out, in)
    W is shared by all N rows, so dW is a sum over rows, which the product G^T @ X does.
    b is added to every row (broadcast), so db = sum over rows of G, shape (out,).
"""


def linear_forward(x, weight, bias):
    """out = x @ weight.T + bias: x (..., in), weight (out, in), bias (out,) -> (..., out).
    Given; do not change."""
    out = x @ weight.T + bias                   # (..., in) @ (in, out) -> (..., out)
    return out, (x, weight)


def linear_backward(grad, cache):
    """Return (dx, dweight, dbias), of the shapes of x, weight and bias."""
    x, weight = cache
    out_features, in_features = weight.shape
    g2 = grad.reshape(-1, out_features)         # (..., out) -> (N, out)
    x2 = x.reshape(-1, in_features)             # (..., in) -> (N, in)
    dx = grad @ weight                          # (..., out) @ (out, in) -> (..., in)
    dweight = g2.T @ x2                         # (out, N) @ (N, in) -> (out, in)
    dbias = g2.sum(axis=0)                      # (N, out) -> (out,)
    return dx, dweight, dbias
