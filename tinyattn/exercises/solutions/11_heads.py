"""Exercise 11, splitting and merging attention heads: reference solution.

Derivation (docs/derivations.md#shape-ops)
    A reshape or a transpose only moves numbers: every output element is one input element.
    The gradient moves back the same way: the backward of a transpose is the inverse
    transpose, and the backward of a reshape is the reshape back. Undo the forward's steps
    in reverse order:
        split:  forward reshape then transpose, so backward transpose back then reshape.
        merge:  forward transpose then reshape, so backward reshape back then transpose.
    Skipping the transpose still gives the right shape, with the numbers in the wrong places.
"""


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
    g = grad.transpose(0, 2, 1, 3)              # (B, h, S, d_k) -> (B, S, h, d_k)
    return g.reshape(b, s, d)                   # (B, S, h, d_k) -> (B, S, D)


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
    g = grad.reshape(b, s, h, d_k)              # (B, S, D) -> (B, S, h, d_k)
    return g.transpose(0, 2, 1, 3)              # (B, S, h, d_k) -> (B, h, S, d_k)
