"""Recurrent cell steps with hand-derived backward (docs/derivations.md#recurrent-cells).

Shape letters: B batch, I input features, H hidden features, G = 4H (LSTM) or 3H (GRU) gate
pre-activations, in PyTorch's gate order (LSTM: i, f, g, o; GRU: r, z, n).

Each recurrent step is split into its matmuls, which are ordinary ``linear`` ops, and its
pointwise part, one op here with its backward beside it (what PyTorch's fused CPU/GPU kernels
``_thnn_fused_lstm_cell`` and ``_thnn_fused_gru_cell`` also fuse). Backpropagation through
time is then the engine's own walk over the steps: the step at time t reads ``h_{t-1}``, so
the engine reaches step t - 1 only after step t has sent its gradient back, carrying
``dh_{t-1}`` (and ``dc_{t-1}``) exactly as a hand-written reverse loop would. Why not one
sequence op: a packed batch shrinks step by step, the reverse direction and projections change
the loop, and the per-step ops keep every one of those cases on the same few checked ops;
the input projections of all steps still run as one matmul (nn/rnn.py).
"""
from __future__ import annotations

from typing import Optional, Tuple

from .. import backend
from ..autograd import Function
from ..precision import is_floating
from ..tensor import Tensor
from .elementwise import relu, tanh
from .matmul import linear
from .pointwise import sigmoid

__all__ = ["lstm_cell_update", "gru_cell_update", "lstm_cell", "gru_cell", "rnn_tanh_cell",
           "rnn_relu_cell"]


def _sigmoid(xp, a):
    """1 / (1 + exp(-a)) without overflow warnings: exp of a non-positive number only."""
    e = xp.exp(-xp.abs(a))
    return xp.where(a >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(a.dtype, copy=False)


class LSTMCellUpdate(Function):
    """(gates (B, 4H), c_prev (B, H)) -> [h | c] (B, 2H), one LSTM step after its matmuls:

        i = s(a_i), f = s(a_f), g = tanh(a_g), o = s(a_o)        (s = sigmoid)
        c = f * c_prev + i * g,        h = o * tanh(c)

    Backward, with (dh, dc_out) the two halves of the incoming gradient:
        dc = dc_out + dh * o * (1 - tanh(c)^2)       the cell state's two uses: h now, c next
        da_i = dc * g * i (1 - i),   da_f = dc * c_prev * f (1 - f)
        da_g = dc * i * (1 - g^2),   da_o = dh * tanh(c) * o (1 - o)
        dc_prev = dc * f                              the additive path: only f scales it
    s' = s (1 - s) and tanh' = 1 - tanh^2, so only the activations are saved.
    """

    def forward(self, gates, c_prev):
        xp = backend.get_array_module(gates)
        hidden = c_prev.shape[-1]
        acts = _sigmoid(xp, gates)                                  # (B, 4H): i, f, ., o
        acts[:, 2 * hidden:3 * hidden] = xp.tanh(gates[:, 2 * hidden:3 * hidden])  # g
        i, f = acts[:, :hidden], acts[:, hidden:2 * hidden]
        g, o = acts[:, 2 * hidden:3 * hidden], acts[:, 3 * hidden:]
        out = xp.empty((gates.shape[0], 2 * hidden), dtype=gates.dtype)   # (B, 2H): h | c
        c = out[:, hidden:]
        xp.multiply(f, c_prev, out=c)
        c += i * g
        tanh_c = xp.tanh(c)
        xp.multiply(o, tanh_c, out=out[:, :hidden])
        self.save_for_backward(acts, c_prev, tanh_c)
        return out

    def backward(self, grad):
        acts, c_prev, tanh_c = self.saved
        xp = backend.get_array_module(grad)
        hidden = c_prev.shape[-1]
        dh, dc_out = grad[:, :hidden], grad[:, hidden:]
        i, f = acts[:, :hidden], acts[:, hidden:2 * hidden]
        g, o = acts[:, 2 * hidden:3 * hidden], acts[:, 3 * hidden:]
        dc = dc_out + dh * o * (1 - tanh_c * tanh_c)
        dgates = xp.empty_like(acts)                                # (B, 4H)
        dgates[:, :hidden] = dc * g * i * (1 - i)
        dgates[:, hidden:2 * hidden] = dc * c_prev * f * (1 - f)
        dgates[:, 2 * hidden:3 * hidden] = dc * i * (1 - g * g)
        dgates[:, 3 * hidden:] = dh * tanh_c * o * (1 - o)
        dc_prev = dc * f if self.needs_input_grad[1] else None
        return dgates, dc_prev


class GRUCellUpdate(Function):
    """(gates_x (B, 3H), gates_h (B, 3H), h_prev (B, H)) -> h (B, H), one GRU step after its
    matmuls (gates_x = x W_ih^T + b_ih, gates_h = h_prev W_hh^T + b_hh, PyTorch's formula):

        r = s(x_r + h_r),  z = s(x_z + h_z),  n = tanh(x_n + r * h_n)
        h = (1 - z) * n + z * h_prev              an interpolation between n and h_prev

    Backward, dh the incoming gradient:
        dn = dh * (1 - z),  dz = dh * (h_prev - n),  dh_prev (direct) = dh * z
        da_n = dn * (1 - n^2);  dx_n = da_n,  dh_n = da_n * r,  dr = da_n * h_n
        da_r = dr * r (1 - r),  da_z = dz * z (1 - z)  (the same for the x and h halves)
    The reset gate multiplies h_n = (W_hn h_prev + b_hn), so h_n is saved with the gates.
    """

    def forward(self, gates_x, gates_h, h_prev):
        xp = backend.get_array_module(gates_x)
        hidden = h_prev.shape[-1]
        rz = _sigmoid(xp, gates_x[:, :2 * hidden] + gates_h[:, :2 * hidden])   # (B, 2H)
        r, z = rz[:, :hidden], rz[:, hidden:]
        h_n = gates_h[:, 2 * hidden:]
        n = xp.tanh(gates_x[:, 2 * hidden:] + r * h_n)
        out = n + z * (h_prev - n)                                  # (1 - z) n + z h_prev
        self.save_for_backward(rz, n, h_n, h_prev)
        return out

    def backward(self, grad):
        rz, n, h_n, h_prev = self.saved
        xp = backend.get_array_module(grad)
        hidden = n.shape[-1]
        r, z = rz[:, :hidden], rz[:, hidden:]
        da_n = grad * (1 - z) * (1 - n * n)
        dgates_x = xp.empty((grad.shape[0], 3 * hidden), dtype=grad.dtype)   # (B, 3H)
        dgates_x[:, :hidden] = da_n * h_n * r * (1 - r)
        dgates_x[:, hidden:2 * hidden] = grad * (h_prev - n) * z * (1 - z)
        dgates_x[:, 2 * hidden:] = da_n
        dgates_h = None
        if self.needs_input_grad[1]:
            dgates_h = dgates_x.copy()
            dgates_h[:, 2 * hidden:] *= r
        dh_prev = grad * z if self.needs_input_grad[2] else None
        return (dgates_x if self.needs_input_grad[0] else None), dgates_h, dh_prev


def _check_step(op: str, named: Tuple[Tuple[str, Tensor, int], ...], hidden_of: Tensor) -> int:
    """Every argument 2-D, floating, batch rows equal and gate widths a multiple of H."""
    hidden = hidden_of.shape[-1] if hidden_of.ndim == 2 else -1
    for name, t, gates in named:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim != 2 or t.shape[0] != named[0][1].shape[0] or t.shape[1] != gates * hidden:
            raise ValueError(f"{op}: {name} has shape {t.shape}; expected (B, {gates}H) with B "
                             f"= {named[0][1].shape[0]} rows and H = {hidden} (from "
                             f"{named[-1][0]}), i.e. ({named[0][1].shape[0]}, {gates * hidden})")
        if not is_floating(t.dtype):
            raise TypeError(f"{op}: {name} must be floating point, got {t.dtype}")
    return hidden


def lstm_cell_update(gates: Tensor, c_prev: Tensor) -> Tensor:
    """The pointwise half of an LSTM step: gate pre-activations (B, 4H) in the order i, f, g, o
    and the previous cell state (B, H) -> [h | c] (B, 2H) (split with ``out[:, :H]``)."""
    _check_step("lstm_cell_update", (("gates", gates, 4), ("c_prev", c_prev, 1)), c_prev)
    return LSTMCellUpdate.apply(gates, c_prev)


def gru_cell_update(gates_x: Tensor, gates_h: Tensor, h_prev: Tensor) -> Tensor:
    """The pointwise half of a GRU step: input gates x W_ih^T + b_ih (B, 3H) and hidden gates
    h_prev W_hh^T + b_hh (B, 3H), in the order r, z, n, and h_prev (B, H) -> h (B, H)."""
    _check_step("gru_cell_update", (("gates_x", gates_x, 3), ("gates_h", gates_h, 3),
                                    ("h_prev", h_prev, 1)), h_prev)
    return GRUCellUpdate.apply(gates_x, gates_h, h_prev)


# ---------------------------------------------------------------- whole steps (torch.*_cell)
def lstm_cell(input: Tensor, hx: Tuple[Tensor, Tensor], w_ih: Tensor, w_hh: Tensor,
              b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None
              ) -> Tuple[Tensor, Tensor]:
    """``torch.lstm_cell``: one LSTM step on 2-D (B, I) input, hx = (h, c) -> (h', c')."""
    h, c = hx
    gates = linear(input, w_ih, b_ih) + linear(h, w_hh, b_hh)   # (B, I) -> (B, 4H)
    out = lstm_cell_update(gates, c)                            # (B, 2H)
    hidden = c.shape[-1]
    return out[:, :hidden], out[:, hidden:]


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
             b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> Tensor:
    """``torch.gru_cell``: one GRU step on 2-D (B, I) input and hx (B, H) -> h'."""
    return gru_cell_update(linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh), hx)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> Tensor:
    """``torch.rnn_tanh_cell``: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return tanh(linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh))


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Optional[Tensor] = None, b_hh: Optional[Tensor] = None) -> Tensor:
    """``torch.rnn_relu_cell``: h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return relu(linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh))
