"""Exercise 28, one GRU step: reference solution for gru_cell_backward.

Derivation (docs/derivations.md#recurrent-cells)
    r = s(x_r + h_r), z = s(x_z + h_z), n = tanh(x_n + r h_n), h = (1 - z) n + z h_prev,
    with (x_r, x_z, x_n) = x W_ih^T + b_ih and (h_r, h_z, h_n) = h_prev W_hh^T + b_hh.
        da_n = grad (1 - z)(1 - n^2)
        da_z = grad (h_prev - n) z(1 - z)      z weighs the OLD state
        da_r = da_n h_n r(1 - r)
    The x side gets [da_r, da_z, da_n]; the h side [da_r, da_z, da_n r] (r multiplies h_n,
    bias included, in PyTorch's GRU). dh_prev = grad z (the direct, additive path) +
    dgates_h W_hh (through the gates); the weights and biases as in a linear layer.
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
    da_n = grad * (1 - z) * (1 - n * n)
    da_z = grad * (h_prev - n) * z * (1 - z)
    da_r = da_n * h_n * r * (1 - r)
    dgates_x = np.concatenate([da_r, da_z, da_n], axis=1)        # (B, 3H)
    dgates_h = np.concatenate([da_r, da_z, da_n * r], axis=1)    # (B, 3H)
    dx = dgates_x @ w_ih                        # (B, 3H) @ (3H, I) -> (B, I)
    dh_prev = grad * z + dgates_h @ w_hh        # direct path + through the gates
    return (dx, dh_prev, dgates_x.T @ x, dgates_h.T @ h_prev, dgates_x.sum(axis=0),
            dgates_h.sum(axis=0))
