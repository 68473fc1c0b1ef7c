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


# A packed batch of 3 sequences of lengths 3, 2, 2: batch sizes (3, 3, 1), rows 0-2, 3-5, 6.
_FORWARD_STEPS = [(0, 3), (3, 3), (6, 1)]
_REVERSE_STEPS = _FORWARD_STEPS[::-1]


def _sequence_ref(step, steps, projected, states):
    """Run ``step(gates_row_block, states_block) -> (output_block, new_states)`` over the
    steps with (B, .) state buffers, as the ops describe; returns the stacked outputs."""
    states = [s.copy() for s in states]
    out = [None] * projected.shape[0]
    for start, size in steps:
        block, new = step(projected[start:start + size], [s[:size] for s in states])
        for buffer, value in zip(states, new):
            buffer[:size] = value
        for k in range(size):
            out[start + k] = block[k]
    return np.stack(out)


def _lstm_sequence_ref(steps):
    def ref(projected, h0, c0, w_hh, w_hr=None):
        def step(gates_x, states):
            h, c = states
            joined = _lstm_update_ref(gates_x + h @ w_hh.T, c)
            hidden = c.shape[1]
            m, c_new = joined[:, :hidden], joined[:, hidden:]
            h_new = m @ w_hr.T if w_hr is not None else m
            return np.concatenate([h_new, c_new], axis=1), (h_new, c_new)
        return _sequence_ref(step, steps, projected, [h0, c0])
    return ref


def _gru_sequence_ref(steps):
    def ref(projected, h0, w_hh, b_hh):
        def step(gates_x, states):
            h_new = _gru_update_ref(gates_x, states[0] @ w_hh.T + b_hh, states[0])
            return h_new, (h_new,)
        return _sequence_ref(step, steps, projected, [h0])
    return ref


def _rnn_sequence_ref(steps):
    def ref(projected, h0, w_hh):
        def step(gates_x, states):
            h_new = np.tanh(gates_x + states[0] @ w_hh.T)
            return h_new, (h_new,)
        return _sequence_ref(step, steps, projected, [h0])
    return ref


def _sequence_cases(gates: int, with_c: bool, projection: int = 0):
    def make(rng: np.random.Generator) -> List[OpCase]:
        hidden, batch, rows = 3, 3, 7
        out_size = projection or hidden
        arrays = [rng.standard_normal((rows, gates * hidden)),
                  rng.standard_normal((batch, out_size))]
        if with_c:
            arrays.append(rng.standard_normal((batch, hidden)))
        arrays.append(rng.standard_normal((gates * hidden, out_size)) * 0.5)
        if projection:
            arrays.append(rng.standard_normal((projection, hidden)) * 0.5)
        if gates == 3:
            arrays.append(rng.standard_normal(gates * hidden) * 0.5)
        return [OpCase(f"N={rows} B={batch} H={hidden} P={projection}", tuple(arrays))]
    return make


def _sequence_rows() -> List[OpSpec]:
    rows = []
    for label, steps in (("", _FORWARD_STEPS), ("_reverse", _REVERSE_STEPS)):
        rows += [
            OpSpec("lstm_sequence" + label,
                   lambda p, h, c, w, _s=steps: rnn.lstm_sequence(p, h, c, w, steps=_s),
                   _lstm_sequence_ref(steps), _sequence_cases(4, True), "recurrent-cells"),
            OpSpec("lstm_sequence_projected" + label,
                   lambda p, h, c, w, r, _s=steps: rnn.lstm_sequence(p, h, c, w, r, steps=_s),
                   _lstm_sequence_ref(steps), _sequence_cases(4, True, projection=2),
                   "recurrent-cells"),
            OpSpec("gru_sequence" + label,
                   lambda p, h, w, b, _s=steps: rnn.gru_sequence(p, h, w, b, steps=_s),
                   _gru_sequence_ref(steps), _sequence_cases(3, False), "recurrent-cells"),
            OpSpec("rnn_sequence" + label,
                   lambda p, h, w, _s=steps: rnn.rnn_sequence(p, h, w, steps=_s),
                   _rnn_sequence_ref(steps), _sequence_cases(1, False), "recurrent-cells"),
        ]
    return rows


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
] + _sequence_rows()
