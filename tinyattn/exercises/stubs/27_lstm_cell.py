"""Exercise 27, one LSTM step: four gates and the cell state's path.

Task
    Fill in lstm_cell_backward: given grad (B, 2H) = [dh | dc_out] and the cache, return
    (dx, dh_prev, dc_prev, dw_ih, dw_hh, db), of the shapes of the forward's inputs.

Shapes
    x (B, I), h_prev and c_prev (B, H), w_ih (4H, I), w_hh (4H, H), b (4H,). Gates in
    PyTorch's order i, f, g, o (rows k*H to (k+1)*H of the weights).

Hints (read docs/derivations.md#recurrent-cells)
    1. c is used twice: in h = o * tanh(c), and by the next step (that gradient is dc_out).
       Add both paths into one dc first.
    2. sigmoid'(a) = s (1 - s) and tanh'(a) = 1 - tanh(a)^2: write each gate's derivative
       from its activation, which the cache holds. Which gate is the tanh?
    3. The gates come from a = x W_ih^T + h_prev W_hh^T + b: from da, the rest is a linear
       layer's backward, and dh_prev is what carries the gradient to the previous step.

Check
    python -m tinyattn.exercises check lstm_cell --path <your folder>
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
    # Your code here (delete the raise).
    raise NotImplementedError("lstm_cell_backward")
