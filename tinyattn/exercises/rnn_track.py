"""Exercises 27-28 of the ops track: the backward of one LSTM step and of one GRU step
(docs/derivations.md#recurrent-cells), in NumPy, as tinyattn/ops/rnn.py writes them.

Each ``Mistake`` is a classic wrong formula computed from the upstream gradient and the
reference solution's cache, so the checker can name it: a gate's derivative taken as the
wrong function's, the cell state's own path dropped, the hidden-state gradient not carried
to the previous step, PyTorch's GRU reset gate applied outside the bias.
"""
from __future__ import annotations

from typing import Any, Callable, List

import numpy as np

from .course import DERIVATIONS, Case, Exercise, Mistake, Part

__all__ = ["RNN_EXERCISES", "lstm_cell_cases", "gru_cell_cases"]

READ = f"{DERIVATIONS}#recurrent-cells"


def _randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return rng.standard_normal(shape) * scale


def lstm_cell_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, batch, inp, hidden in (("one sequence, H = 2", 1, 3, 2),
                                      ("a batch of 4, I = 5, H = 3", 4, 5, 3),
                                      ("H = 1", 2, 2, 1)):
        cases.append(Case(label, {"x": _randn(rng, batch, inp),
                                  "h_prev": _randn(rng, batch, hidden),
                                  "c_prev": _randn(rng, batch, hidden),
                                  "w_ih": _randn(rng, 4 * hidden, inp, scale=0.5),
                                  "w_hh": _randn(rng, 4 * hidden, hidden, scale=0.5),
                                  "b": _randn(rng, 4 * hidden, scale=0.5)},
                          dims={"B": batch, "I": inp, "H": hidden}))
    return cases


def gru_cell_cases(rng: np.random.Generator) -> List[Case]:
    cases = []
    for label, batch, inp, hidden in (("one sequence, H = 2", 1, 3, 2),
                                      ("a batch of 4, I = 5, H = 3", 4, 5, 3),
                                      ("H = 1", 2, 2, 1)):
        cases.append(Case(label, {"x": _randn(rng, batch, inp),
                                  "h_prev": _randn(rng, batch, hidden),
                                  "w_ih": _randn(rng, 3 * hidden, inp, scale=0.5),
                                  "w_hh": _randn(rng, 3 * hidden, hidden, scale=0.5),
                                  "b_ih": _randn(rng, 3 * hidden, scale=0.5),
                                  "b_hh": _randn(rng, 3 * hidden, scale=0.5)},
                          dims={"B": batch, "I": inp, "H": hidden}))
    return cases


# ------------------------------------------------------------------ 27 LSTM step
# cache = (x, h_prev, c_prev, w_ih, w_hh, acts (B, 4H) = [i, f, g, o], tanh_c)
def _lstm_grads(grad: np.ndarray, cache: Any, *, gate_slope: str = "tanh",
                cell_path: bool = True, tanh_slope: bool = True) -> tuple:
    """The six gradients, optionally with one classic mistake."""
    x, h_prev, c_prev, w_ih, w_hh, acts, tanh_c = cache
    hidden = c_prev.shape[1]
    i, f, g, o = (acts[:, k * hidden:(k + 1) * hidden] for k in range(4))
    dh, dc_out = grad[:, :hidden], grad[:, hidden:]
    through_h = dh * o * ((1 - tanh_c ** 2) if tanh_slope else 1.0)
    dc = (dc_out if cell_path else 0.0) + through_h
    g_slope = (1 - g * g) if gate_slope == "tanh" else g * (1 - g)
    dgates = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * g_slope, dh * tanh_c * o * (1 - o)], axis=1)
    return (dgates @ w_ih, dgates @ w_hh, dc * f, dgates.T @ x, dgates.T @ h_prev,
            dgates.sum(axis=0))


def _lstm_wrong(index: int, **mistake: Any) -> Callable[[np.ndarray, Any], np.ndarray]:
    return lambda grad, cache: _lstm_grads(grad, cache, **mistake)[index]


_LSTM_G_SLOPE = ("The candidate gate g is tanh(a_g), not a sigmoid: its derivative is "
                 "1 - g^2. You used g (1 - g), the sigmoid's, which is right only for i, f "
                 "and o.")
_LSTM_CELL_PATH = ("The cell state's own path is missing: c_t goes to the next step as well "
                   "as into h_t, so dc = dc_out + dh * o * (1 - tanh(c)^2). You kept only the "
                   "part through h_t; the second half of grad is dc_out, the gradient the "
                   "next step sends back to c_t: the LSTM's long memory.")
_LSTM_TANH = ("h = o * tanh(c), so the path from h to c passes tanh: dc = dc_out + dh * o * "
              "(1 - tanh(c)^2). You left out the (1 - tanh(c)^2) factor.")
_LSTM_NO_CARRY = ("The hidden-state gradient is not carried to the previous step: h_prev "
                  "feeds every gate through W_hh, so dh_prev = dgates @ W_hh. Without it "
                  "backpropagation through time stops after one step.")
LSTM_INPUTS = ("x", "h_prev", "c_prev", "w_ih", "w_hh", "b")
LSTM_MISTAKES = [
    *(Mistake(name, "gate_derivative", _LSTM_G_SLOPE, _lstm_wrong(k, gate_slope="sigmoid"))
      for k, name in enumerate(LSTM_INPUTS)),
    *(Mistake(name, "cell_path", _LSTM_CELL_PATH, _lstm_wrong(k, cell_path=False))
      for k, name in enumerate(LSTM_INPUTS)),
    *(Mistake(name, "cell_tanh", _LSTM_TANH, _lstm_wrong(k, tanh_slope=False))
      for k, name in enumerate(LSTM_INPUTS)),
    Mistake("h_prev", "no_carry", _LSTM_NO_CARRY, lambda g, c: np.zeros_like(c[1])),
]


# ------------------------------------------------------------------ 28 GRU step
# cache = (x, h_prev, w_ih, w_hh, r, z, n, h_n)   with h_n = (h_prev W_hh^T + b_hh)[:, 2H:]
def _gru_grads(grad: np.ndarray, cache: Any, *, direct: bool = True, carry: bool = True,
               reset_on_bias: bool = True, z_sign: float = 1.0) -> tuple:
    x, h_prev, w_ih, w_hh, r, z, n, h_n = cache
    hidden = h_prev.shape[1]
    da_n = grad * (1 - z) * (1 - n * n)
    da_r = da_n * h_n * r * (1 - r)
    da_z = z_sign * grad * (h_prev - n) * z * (1 - z)
    dgates_x = np.concatenate([da_r, da_z, da_n], axis=1)            # (B, 3H)
    dgates_h = np.concatenate([da_r, da_z, da_n * r], axis=1)
    dh_prev = (grad * z if direct else 0.0) + (dgates_h @ w_hh if carry else 0.0)
    db_hh = dgates_h.sum(axis=0)
    if not reset_on_bias:       # r applied to W_hn h only: b_hn's gradient lacks the r
        db_hh = np.concatenate([db_hh[:2 * hidden], da_n.sum(axis=0)])
    return (dgates_x @ w_ih, dh_prev, dgates_x.T @ x, dgates_h.T @ h_prev,
            dgates_x.sum(axis=0), db_hh)


def _gru_wrong(index: int, **mistake: Any) -> Callable[[np.ndarray, Any], np.ndarray]:
    return lambda grad, cache: _gru_grads(grad, cache, **mistake)[index]


_GRU_DIRECT = ("h = (1 - z) * n + z * h_prev uses h_prev directly too: dh_prev gets "
               "grad * z on top of the path through the gates (dgates_h @ W_hh). That "
               "direct term is the GRU's additive path, its counterpart of LSTM's dc * f.")
_GRU_NO_CARRY = ("The hidden-state gradient is not carried through W_hh to the previous "
                 "step: h_prev also feeds r, z and n through W_hh, so dh_prev = grad * z + "
                 "dgates_h @ W_hh, where dgates_h is [da_r, da_z, da_n * r].")
_GRU_RESET = ("PyTorch's GRU multiplies the reset gate by (W_hn h_prev + b_hn), bias "
              "included: n = tanh(x_n + r * (W_hn h_prev + b_hn)). So b_hn's gradient is "
              "da_n * r, like W_hn's, not da_n.")
_GRU_Z_SIGN = ("The interpolation's sign: h = (1 - z) * n + z * h_prev, so dh/dz = "
               "h_prev - n, not n - h_prev (z is the weight of the OLD state).")
GRU_INPUTS = ("x", "h_prev", "w_ih", "w_hh", "b_ih", "b_hh")
GRU_MISTAKES = [
    Mistake("h_prev", "no_direct", _GRU_DIRECT, _gru_wrong(1, direct=False)),
    Mistake("h_prev", "no_carry", _GRU_NO_CARRY, _gru_wrong(1, carry=False)),
    Mistake("b_hh", "reset_outside_bias", _GRU_RESET, _gru_wrong(5, reset_on_bias=False)),
    *(Mistake(name, "gate_derivative", _GRU_Z_SIGN, _gru_wrong(k, z_sign=-1.0))
      for k, name in enumerate(GRU_INPUTS)),
]

RNN_EXERCISES: List[Exercise] = [
    Exercise(27, "lstm_cell", "one LSTM step: four gates and the cell state's path", READ,
             [Part("lstm_cell", ("x", "h_prev", "c_prev", "w_ih", "w_hh", "b"),
                   lstm_cell_cases, mistakes=LSTM_MISTAKES,
                   transpose_hint="for gates = x @ W_ih^T: dW_ih = dgates^T @ x, of shape "
                                  "(4H, I); x^T @ dgates is its transpose")]),
    Exercise(28, "gru_cell", "one GRU step: PyTorch's reset gate and the interpolation", READ,
             [Part("gru_cell", ("x", "h_prev", "w_ih", "w_hh", "b_ih", "b_hh"),
                   gru_cell_cases, mistakes=GRU_MISTAKES,
                   transpose_hint="for gates = x @ W_ih^T: dW_ih = dgates_x^T @ x, of shape "
                                  "(3H, I); x^T @ dgates_x is its transpose")]),
]
