"""Exercise 28, one GRU step: PyTorch's reset gate and the interpolation.

Task
    Fill in gru_cell_backward: given grad (B, H) and the cache, return
    (dx, dh_prev, dw_ih, dw_hh, db_ih, db_hh), of the shapes of the forward's inputs.

Shapes
    x (B, I), h_prev (B, H), w_ih (3H, I), w_hh (3H, H), b_ih and b_hh (3H,). Gates in
    PyTorch's order r, z, n.

Hints (read docs/derivations.md#recurrent-cells)
    1. h = (1 - z) n + z h_prev: differentiate the interpolation first (dn, dz, and the
       direct term for h_prev).
    2. In PyTorch's GRU the reset gate multiplies h_n = W_hn h_prev + b_hn, bias included,
       so the h side of the n gate gets da_n * r while the x side gets da_n.
    3. h_prev reaches h twice: directly (through z * h_prev) and through W_hh. Both paths
       carry gradient to the previous step.

Check
    python -m tinyattn.exercises check gru_cell --path <your folder>
"""
import numpy as np


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def gru_cell_forward(x, h_prev, w_ih, w_hh, b_ih, b_hh):
    """One GRU step with PyTorch's formula, gates r, z, n: x (B, I), h_prev (B, H), w_ih
    (3H, I), w_hh (3H, H), b_ih and b_hh (3H,) -> h (B, H). Given; do not change."""
    hidden = h_prev.shape[1]
    gx = x @ w_ih.T + b_ih                                 # (B, 3H): x_r, x_z, x_n
    gh = h_prev @ w_hh.T + b_hh                            # (B, 3H): h_r, h_z, h_n
    r = sigmoid(gx[:, :hidden] + gh[:, :hidden])
    z = sigmoid(gx[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
    h_n = gh[:, 2 * hidden:]                               # W_hn h_prev + b_hn
    n = np.tanh(gx[:, 2 * hidden:] + r * h_n)
    h = (1 - z) * n + z * h_prev
    return h, (x, h_prev, w_ih, w_hh, r, z, n, h_n)


def gru_cell_backward(grad, cache):
    """grad (B, H) at h. Return (dx, dh_prev, dw_ih, dw_hh, db_ih, db_hh)."""
    x, h_prev, w_ih, w_hh, r, z, n, h_n = cache
    # Your code here (delete the raise).
    raise NotImplementedError("gru_cell_backward")
