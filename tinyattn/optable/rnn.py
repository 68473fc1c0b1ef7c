"""The op-table rows of ops/rnn.py: the recurrent cell steps, each against a NumPy reference
written from the gate formulas (PyTorch's gate order: LSTM i, f, g, o; GRU r, z, n)."""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from ..ops import cat, rnn
from .spec import OpCase, OpSpec

__all__ = ["ROWS"]


def _sig(a: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-a))


def _lstm_update_ref(gates: np.ndarray, c_prev: np.ndarray) -> np.ndarray:
    i, f, g, o = np.split(gates, 4, axis=1)
    c = _sig(f) * c_prev + _sig(i) * np.tanh(g)
    return np.concatenate([_sig(o) * np.tanh(c), c], axis=1)


def _gru_update_ref(gates_x: np.ndarray, gates_h: np.ndarray, h_prev: np.ndarray) -> np.ndarray:
    x_r, x_z, x_n = np.split(gates_x, 3, axis=1)
    h_r, h_z, h_n = np.split(gates_h, 3, axis=1)
    r, z = _sig(x_r + h_r), _sig(x_z + h_z)
    n = np.tanh(x_n + r * h_n)
    return (1 - z) * n + z * h_prev


def _lstm_cell_ref(x, h, c, w_ih, w_hh, b_ih, b_hh) -> np.ndarray:
    return _lstm_update_ref(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh, c)


def _gru_cell_ref(x, h, w_ih, w_hh, b_ih, b_hh) -> np.ndarray:
    return _gru_update_ref(x @ w_ih.T + b_ih, h @ w_hh.T + b_hh, h)


def _rnn_tanh_cell_ref(x, h, w_ih, w_hh, b_ih, b_hh) -> np.ndarray:
    return np.tanh(x @ w_ih.T + b_ih + h @ w_hh.T + b_hh)


def _shapes(batch: int, hidden: int, widths: Tuple[int, ...]) -> List[Tuple[int, int]]:
    return [(batch, w * hidden) for w in widths]


def _update_cases(widths: Tuple[int, ...]):
    """Gates of moderate size (tanh and sigmoid far from saturation) and a batch of one."""
    def make(rng: np.random.Generator) -> List[OpCase]:
        out = []
        for batch, hidden in ((3, 2), (1, 4)):
            arrays = tuple(rng.standard_normal(s) for s in _shapes(batch, hidden, widths))
            out.append(OpCase(f"B={batch} H={hidden}", arrays))
        return out
    return make


def _cell_cases(gates: int, with_c: bool):
    def make(rng: np.random.Generator) -> List[OpCase]:
        batch, inp, hidden = 3, 4, 2
        arrays = [rng.standard_normal((batch, inp)), rng.standard_normal((batch, hidden))]
        if with_c:
            arrays.append(rng.standard_normal((batch, hidden)))
        arrays += [rng.standard_normal((gates * hidden, inp)) * 0.5,
                   rng.standard_normal((gates * hidden, hidden)) * 0.5,
                   rng.standard_normal(gates * hidden) * 0.5,
                   rng.standard_normal(gates * hidden) * 0.5]
        return [OpCase(f"B={batch} I={inp} H={hidden}", tuple(arrays))]
    return make


def _lstm_cell_joined(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """lstm_cell's (h', c') joined as [h' | c'] so the table compares one tensor."""
    return cat(list(rnn.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)), dim=1)


ROWS: List[OpSpec] = [
    OpSpec("lstm_cell_update", rnn.lstm_cell_update, _lstm_update_ref, _update_cases((4, 1)),
           "recurrent-cells"),
    OpSpec("gru_cell_update", rnn.gru_cell_update, _gru_update_ref, _update_cases((3, 3, 1)),
           "recurrent-cells"),
    OpSpec("lstm_cell", _lstm_cell_joined, _lstm_cell_ref, _cell_cases(4, True),
           "recurrent-cells"),
    OpSpec("gru_cell", rnn.gru_cell, _gru_cell_ref, _cell_cases(3, False), "recurrent-cells"),
    OpSpec("rnn_tanh_cell", rnn.rnn_tanh_cell, _rnn_tanh_cell_ref, _cell_cases(1, False),
           "recurrent-cells"),
]
