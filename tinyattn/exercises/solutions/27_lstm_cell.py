"""Exercise 27, one LSTM step: reference solution for lstm_cell_backward.

Derivation (docs/derivations.md#recurrent-cells)
    a = x W_ih^T + h_prev W_hh^T + b, split (i, f, g, o); i, f, o = sigmoid, g = tanh.
    c = f c_prev + i g,  h = o tanh(c).   grad = [dh | dc_out].
        dc = dc_out + dh o (1 - tanh(c)^2)     c's two uses: into h now, to the next step
        da_i = dc g i(1-i),  da_f = dc c_prev f(1-f),  da_g = dc i (1-g^2),
        da_o = dh tanh(c) o(1-o)               (sigmoid' = s(1-s), tanh' = 1 - tanh^2)
        dc_prev = dc f                         the additive path: only f scales it
    and the matmuls as in a linear layer: dx = da W_ih, dh_prev = da W_hh (carried to the
    previous step), dW_ih = da^T x, dW_hh = da^T h_prev, db = sum of da over the batch.
"""
import numpy as np


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_cell_forward(x, h_prev, c_prev, w_ih, w_hh, b):
    """One LSTM step, PyTorch's gate order i, f, g, o: x (B, I), h_prev and c_prev (B, H),
    w_ih (4H, I), w_hh (4H, H), b (4H,) (PyTorch's b_ih + b_hh) -> out = [h | c] (B, 2H).
    Given; do not change."""
    hidden = c_prev.shape[1]
    a = x @ w_ih.T + h_prev @ w_hh.T + b                   # (B, 4H) gate pre-activations
    i, f = sigmoid(a[:, :hidden]), sigmoid(a[:, hidden:2 * hidden])
    g, o = np.tanh(a[:, 2 * hidden:3 * hidden]), sigmoid(a[:, 3 * hidden:])
    c = f * c_prev + i * g                                 # (B, H) the cell state
    tanh_c = np.tanh(c)
    h = o * tanh_c                                         # (B, H)
    acts = np.concatenate([i, f, g, o], axis=1)            # (B, 4H)
    return np.concatenate([h, c], axis=1), (x, h_prev, c_prev, w_ih, w_hh, acts, tanh_c)


def lstm_cell_backward(grad, cache):
    """grad (B, 2H) = [dh | dc_out]: the gradients arriving at h and at c (dc_out comes from
    the next step). Return (dx, dh_prev, dc_prev, dw_ih, dw_hh, db)."""
    x, h_prev, c_prev, w_ih, w_hh, acts, tanh_c = cache
    hidden = c_prev.shape[1]
    i, f = acts[:, :hidden], acts[:, hidden:2 * hidden]
    g, o = acts[:, 2 * hidden:3 * hidden], acts[:, 3 * hidden:]
    dh, dc_out = grad[:, :hidden], grad[:, hidden:]
    dc = dc_out + dh * o * (1 - tanh_c ** 2)
    da = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                         dc * i * (1 - g * g), dh * tanh_c * o * (1 - o)], axis=1)  # (B, 4H)
    dx = da @ w_ih                              # (B, 4H) @ (4H, I) -> (B, I)
    dh_prev = da @ w_hh                         # (B, 4H) @ (4H, H) -> (B, H)
    dc_prev = dc * f
    return dx, dh_prev, dc_prev, da.T @ x, da.T @ h_prev, da.sum(axis=0)
