"""Recurrent cell steps with hand-derived backward (docs/derivations.md#recurrent-cells).

Shape letters: B batch, I input features, H hidden features, G = 4H (LSTM) or 3H (GRU) gate
pre-activations, in PyTorch's gate order (LSTM: i, f, g, o; GRU: r, z, n).

Each recurrent step is split into its matmuls and its pointwise part. For one step (the
cells nn.RNNCell, nn.LSTMCell, nn.GRUCell and torch's ``lstm_cell`` and friends) the
pointwise part is one op (``lstm_cell_update``, ``gru_cell_update``, what PyTorch's fused
kernels ``_thnn_fused_lstm_cell`` and ``_thnn_fused_gru_cell`` also fuse) and the matmuls are
``linear`` ops. For a whole layer direction (nn.RNN, nn.LSTM, nn.GRU) the input projections
of all steps are one matmul done by the layer, and the loop over the steps is one sequence
op here whose backward runs the steps in reverse (BPTT written out, min-char-rnn style),
sharing the step math with the cell ops. Why not let the engine walk per-step ops:
docs/derivations.md#recurrent-cells (slicing each step out of the projection costs a
full-size zero gradient per step: quadratic in the sequence length).
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

__all__ = ["lstm_cell_update", "gru_cell_update", "lstm_sequence", "gru_sequence",
           "rnn_sequence", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]


def _sigmoid(xp, a):
    """s(a) = (1 + tanh(a / 2)) / 2: never overflows (exp(-a) would for a < -709 in float64)
    and takes three passes over the array, in place after the first."""
    out = xp.tanh(a * 0.5)
    out *= 0.5
    out += 0.5
    return out


def _lstm_activations(xp, gates, hidden: int):
    """The four gate activations (B, 4H): sigmoid for i, f, o and tanh for g."""
    acts = _sigmoid(xp, gates)                                      # (B, 4H): i, f, ., o
    acts[:, 2 * hidden:3 * hidden] = xp.tanh(gates[:, 2 * hidden:3 * hidden])   # g
    return acts


def _lstm_backward(xp, acts, c_prev, tanh_c, dh, dc_out):
    """One LSTM step's backward (the derivation in LSTMCellUpdate): (dgates, dc_prev)."""
    hidden = c_prev.shape[-1]
    i, f = acts[:, :hidden], acts[:, hidden:2 * hidden]
    g, o = acts[:, 2 * hidden:3 * hidden], acts[:, 3 * hidden:]
    dc = dc_out + dh * o * (1 - tanh_c * tanh_c)
    dgates = xp.empty_like(acts)                                    # (B, 4H)
    dgates[:, :hidden] = dc * g * i * (1 - i)
    dgates[:, hidden:2 * hidden] = dc * c_prev * f * (1 - f)
    dgates[:, 2 * hidden:3 * hidden] = dc * i * (1 - g * g)
    dgates[:, 3 * hidden:] = dh * tanh_c * o * (1 - o)
    return dgates, dc * f


class LSTMCellUpdate(Function):
    """(gates (B, 4H), c_prev (B, H)) -> [h | c] (B, 2H), one LSTM step after its matmuls:

        i = s(a_i), f = s(a_f), g = tanh(a_g), o = s(a_o)        (s = sigmoid)
        c = f * c_prev + i * g,        h = o * tanh(c)

    Backward (``_lstm_backward``), with (dh, dc_out) the two halves of the incoming gradient:
        dc = dc_out + dh * o * (1 - tanh(c)^2)       the cell state's two uses: h now, c next
        da_i = dc * g * i (1 - i),   da_f = dc * c_prev * f (1 - f)
        da_g = dc * i * (1 - g^2),   da_o = dh * tanh(c) * o (1 - o)
        dc_prev = dc * f                              the additive path: only f scales it
    s' = s (1 - s) and tanh' = 1 - tanh^2, so only the activations are saved.
    """

    def forward(self, gates, c_prev):
        xp = backend.get_array_module(gates)
        hidden = c_prev.shape[-1]
        acts = _lstm_activations(xp, gates, hidden)
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
        dgates, dc_prev = _lstm_backward(xp, acts, c_prev, tanh_c, grad[:, :hidden],
                                         grad[:, hidden:])
        return dgates, (dc_prev if self.needs_input_grad[1] else None)


def _gru_forward(xp, gates_x, gates_h, h_prev):
    """One GRU step's pointwise part: (h, rz (B, 2H), n (B, H))."""
    hidden = h_prev.shape[-1]
    rz = _sigmoid(xp, gates_x[:, :2 * hidden] + gates_h[:, :2 * hidden])   # (B, 2H)
    n = xp.tanh(gates_x[:, 2 * hidden:] + rz[:, :hidden] * gates_h[:, 2 * hidden:])
    return n + rz[:, hidden:] * (h_prev - n), rz, n                 # (1 - z) n + z h_prev


def _gru_backward(xp, rz, n, h_n, h_prev, grad):
    """One GRU step's backward (the derivation in GRUCellUpdate): (dgates_x, dgates_h,
    dh_prev through the direct path z * h_prev only)."""
    hidden = n.shape[-1]
    r, z = rz[:, :hidden], rz[:, hidden:]
    da_n = grad * (1 - z) * (1 - n * n)
    dgates_x = xp.empty((grad.shape[0], 3 * hidden), dtype=grad.dtype)   # (B, 3H)
    dgates_x[:, :hidden] = da_n * h_n * r * (1 - r)
    dgates_x[:, hidden:2 * hidden] = grad * (h_prev - n) * z * (1 - z)
    dgates_x[:, 2 * hidden:] = da_n
    dgates_h = dgates_x.copy()
    dgates_h[:, 2 * hidden:] *= r
    return dgates_x, dgates_h, grad * z


class GRUCellUpdate(Function):
    """(gates_x (B, 3H), gates_h (B, 3H), h_prev (B, H)) -> h (B, H), one GRU step after its
    matmuls (gates_x = x W_ih^T + b_ih, gates_h = h_prev W_hh^T + b_hh, PyTorch's formula):

        r = s(x_r + h_r),  z = s(x_z + h_z),  n = tanh(x_n + r * h_n)
        h = (1 - z) * n + z * h_prev              an interpolation between n and h_prev

    Backward (``_gru_backward``), dh the incoming gradient:
        dn = dh * (1 - z),  dz = dh * (h_prev - n),  dh_prev (direct) = dh * z
        da_n = dn * (1 - n^2);  dx_n = da_n,  dh_n = da_n * r,  dr = da_n * h_n
        da_r = dr * r (1 - r),  da_z = dz * z (1 - z)  (the same for the x and h halves)
    The reset gate multiplies h_n = (W_hn h_prev + b_hn), so h_n is saved with the gates.
    """

    def forward(self, gates_x, gates_h, h_prev):
        xp = backend.get_array_module(gates_x)
        out, rz, n = _gru_forward(xp, gates_x, gates_h, h_prev)
        self.save_for_backward(rz, n, gates_h[:, 2 * h_prev.shape[-1]:], h_prev)
        return out

    def backward(self, grad):
        rz, n, h_n, h_prev = self.saved
        dgates_x, dgates_h, dh_prev = _gru_backward(backend.get_array_module(grad), rz, n, h_n,
                                                    h_prev, grad)
        return dgates_x, dgates_h, dh_prev


# ---------------------------------------------------------------- whole sequences (BPTT)
class LSTMSequence(Function):
    """One LSTM layer in one direction over a packed batch: (projected (N, 4H) = x W_ih^T +
    b_ih + b_hh for every step at once, h0 (B, H_out), c0 (B, H), W_hh (4H, H_out)[, W_hr (P,
    H)]) -> [h_t | c_t] (N, H_out + H), one row per packed step and sequence.

    ``steps`` lists (start, size) in the order the steps run: step k updates the first
    ``size`` rows of the state (sequences sorted longest first) from rows ``start:start +
    size`` of ``projected``. Forward: the state is one (B, .) buffer; a sequence that ended
    keeps its last state, one that has not started yet (the reverse direction) still holds h0.

    Backward through time, the steps in reverse: dh, dc are (B, .) buffers holding the
    gradient of the state after the step being undone (zero for rows no later step read):
        dh_t = dY_h + dh[:size], dc_out = dY_c + dc[:size]
        (with projection: dW_hr gets dh_t^T m_t, and dm_t = dh_t W_hr)
        dgates, dc_prev = the LSTM step backward (LSTMCellUpdate)
        dh[:size] = dgates W_hh,   dc[:size] = dc_prev
    After the last undone step the buffers are dh0, dc0. dprojected is every step's dgates,
    and dW_hh = dprojected^T H_prev: one matmul over all the steps, not one per step.
    """

    def forward(self, projected, h0, c0, w_hh, *w_hr, steps):
        xp = backend.get_array_module(projected)
        hidden, out_size = c0.shape[1], h0.shape[1]
        h, c = h0.copy(), c0.copy()                                 # (B, H_out), (B, H)
        y = xp.empty((projected.shape[0], out_size + hidden), dtype=projected.dtype)
        keep = self.recording
        if keep:
            acts_all, tanh_all = xp.empty_like(projected), xp.empty_like(y[:, out_size:])
            h_prev_all, c_prev_all = xp.empty_like(y[:, :out_size]), xp.empty_like(tanh_all)
            m_all = xp.empty_like(tanh_all) if w_hr else None
        w_hh_t = w_hh.T
        for start, size in steps:
            stop = start + size
            gates = projected[start:stop] + h[:size] @ w_hh_t       # (b, 4H)
            acts = _lstm_activations(xp, gates, hidden)
            c_new = acts[:, hidden:2 * hidden] * c[:size]
            c_new += acts[:, :hidden] * acts[:, 2 * hidden:3 * hidden]
            tanh_c = xp.tanh(c_new)
            m = acts[:, 3 * hidden:] * tanh_c                        # (b, H)
            h_new = m @ w_hr[0].T if w_hr else m                    # (b, P) or (b, H)
            if keep:
                acts_all[start:stop], tanh_all[start:stop] = acts, tanh_c
                h_prev_all[start:stop], c_prev_all[start:stop] = h[:size], c[:size]
                if w_hr:
                    m_all[start:stop] = m
            h[:size], c[:size] = h_new, c_new
            y[start:stop, :out_size], y[start:stop, out_size:] = h_new, c_new
        if keep:
            self.save_for_backward(acts_all, tanh_all, h_prev_all, c_prev_all, m_all, w_hh,
                                   w_hr[0] if w_hr else None, steps, h0.shape[0])
        return y

    def backward(self, grad):
        acts_all, tanh_all, h_prev_all, c_prev_all, m_all, w_hh, w_hr, steps, batch = self.saved
        xp = backend.get_array_module(grad)
        hidden, out_size = c_prev_all.shape[1], h_prev_all.shape[1]
        dh = xp.zeros((batch, out_size), dtype=grad.dtype)
        dc = xp.zeros((batch, hidden), dtype=grad.dtype)
        dprojected = xp.empty_like(acts_all)                        # (N, 4H)
        dh_all = xp.empty_like(h_prev_all) if w_hr is not None else None
        for start, size in reversed(steps):
            stop = start + size
            dh_t = grad[start:stop, :out_size] + dh[:size]
            dc_out = grad[start:stop, out_size:] + dc[:size]
            if w_hr is not None:
                dh_all[start:stop] = dh_t
                dh_t = dh_t @ w_hr                                  # (b, P) -> (b, H)
            dgates, dc[:size] = _lstm_backward(xp, acts_all[start:stop], c_prev_all[start:stop],
                                               tanh_all[start:stop], dh_t, dc_out)
            dprojected[start:stop] = dgates
            dh[:size] = dgates @ w_hh                               # (b, 4H) -> (b, H_out)
        dw_hh = dprojected.T @ h_prev_all                           # (4H, N) @ (N, H_out)
        grads = [dprojected, dh, dc, dw_hh]
        if w_hr is not None:
            grads.append(dh_all.T @ m_all)                          # (P, N) @ (N, H)
        return tuple(grads)


class GRUSequence(Function):
    """One GRU layer in one direction over a packed batch: (projected (N, 3H) = x W_ih^T + b_ih,
    h0 (B, H), W_hh (3H, H)[, b_hh (3H)]) -> h_t (N, H); ``steps`` as in LSTMSequence.

    Backward through time, the steps in reverse, dh a (B, H) buffer as in LSTMSequence:
        dh_t = dY + dh[:size]
        dgates_x, dgates_h, direct = the GRU step backward (GRUCellUpdate)
        dh[:size] = dgates_h W_hh + direct
    dprojected = every step's dgates_x; dW_hh = dGates_h^T H_prev, db_hh = sum of dGates_h.
    """

    def forward(self, projected, h0, w_hh, *b_hh, steps):
        xp = backend.get_array_module(projected)
        hidden = h0.shape[1]
        h = h0.copy()
        y = xp.empty((projected.shape[0], hidden), dtype=projected.dtype)
        keep = self.recording
        if keep:
            rz_all = xp.empty((projected.shape[0], 2 * hidden), dtype=projected.dtype)
            n_all, hn_all, h_prev_all = xp.empty_like(y), xp.empty_like(y), xp.empty_like(y)
        w_hh_t = w_hh.T
        for start, size in steps:
            stop = start + size
            gates_h = h[:size] @ w_hh_t                             # (b, 3H)
            if b_hh:
                gates_h += b_hh[0]
            h_new, rz, n = _gru_forward(xp, projected[start:stop], gates_h, h[:size])
            if keep:
                rz_all[start:stop], n_all[start:stop] = rz, n
                hn_all[start:stop], h_prev_all[start:stop] = gates_h[:, 2 * hidden:], h[:size]
            h[:size] = y[start:stop] = h_new
        if keep:
            self.save_for_backward(rz_all, n_all, hn_all, h_prev_all, w_hh, steps, h0.shape[0],
                                   bool(b_hh))
        return y

    def backward(self, grad):
        rz_all, n_all, hn_all, h_prev_all, w_hh, steps, batch, has_bias = self.saved
        xp = backend.get_array_module(grad)
        dh = xp.zeros((batch, n_all.shape[1]), dtype=grad.dtype)
        dprojected = xp.empty((grad.shape[0], w_hh.shape[0]), dtype=grad.dtype)   # (N, 3H)
        dgates_h_all = xp.empty_like(dprojected)
        for start, size in reversed(steps):
            stop = start + size
            dgates_x, dgates_h, direct = _gru_backward(
                xp, rz_all[start:stop], n_all[start:stop], hn_all[start:stop],
                h_prev_all[start:stop], grad[start:stop] + dh[:size])
            dprojected[start:stop], dgates_h_all[start:stop] = dgates_x, dgates_h
            dh[:size] = dgates_h @ w_hh + direct                     # (b, 3H) -> (b, H)
        grads = [dprojected, dh, dgates_h_all.T @ h_prev_all]       # dW_hh: (3H, N) @ (N, H)
        if has_bias:
            grads.append(backend.accurate_sum(dgates_h_all, 0))   # float64 blocks
        return tuple(grads)


class RNNSequence(Function):
    """One Elman RNN layer in one direction: (projected (N, H) = x W_ih^T + b_ih + b_hh, h0
    (B, H), W_hh (H, H)) -> h_t = act(projected_t + h_{t-1} W_hh^T) (N, H), act tanh or relu.

    Backward through time: da_t = (dY + dh[:size]) * act'(a_t) with tanh' = 1 - h_t^2 and
    relu' = [h_t > 0], both read from the output; dh[:size] = da_t W_hh; dW_hh = dA^T H_prev.
    """

    def forward(self, projected, h0, w_hh, steps, relu: bool):
        xp = backend.get_array_module(projected)
        h = h0.copy()
        y = xp.empty_like(projected)
        h_prev_all = xp.empty_like(projected) if self.recording else None
        w_hh_t = w_hh.T
        for start, size in steps:
            stop = start + size
            if h_prev_all is not None:
                h_prev_all[start:stop] = h[:size]
            pre = projected[start:stop] + h[:size] @ w_hh_t
            h[:size] = y[start:stop] = xp.maximum(pre, 0) if relu else xp.tanh(pre)
        if self.recording:
            self.save_for_backward(y, h_prev_all, w_hh, steps, relu, h0.shape[0])
        return y

    def backward(self, grad):
        y, h_prev_all, w_hh, steps, relu, batch = self.saved
        xp = backend.get_array_module(grad)
        dh = xp.zeros((batch, y.shape[1]), dtype=grad.dtype)
        dpre = xp.empty_like(y)                                     # (N, H)
        for start, size in reversed(steps):
            stop = start + size
            out = y[start:stop]
            slope = (out > 0).astype(out.dtype) if relu else 1 - out * out
            dpre[start:stop] = (grad[start:stop] + dh[:size]) * slope
            dh[:size] = dpre[start:stop] @ w_hh                     # (b, H) -> (b, H)
        return dpre, dh, dpre.T @ h_prev_all


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


def _check_steps(op: str, projected: Tensor, h0: Tensor, steps) -> list:
    """``steps`` as (start, size) pairs that tile the rows of ``projected`` and fit h0."""
    steps = [(int(start), int(size)) for start, size in steps]
    rows = sorted(steps)
    covered = 0
    for start, size in rows:
        if start != covered or size < 0 or size > h0.shape[0]:
            raise ValueError(f"{op}: steps {steps} must tile the {projected.shape[0]} rows of "
                             f"projected in order of their starts, each at most h0's "
                             f"{h0.shape[0]} rows")
        covered += size
    if covered != projected.shape[0]:
        raise ValueError(f"{op}: steps cover {covered} rows but projected has "
                         f"{projected.shape[0]}")
    return steps


def lstm_sequence(projected: Tensor, h0: Tensor, c0: Tensor, w_hh: Tensor,
                  w_hr: Optional[Tensor] = None, steps=()) -> Tensor:
    """A whole LSTM layer direction (LSTMSequence): -> [h_t | c_t] (N, H_out + H)."""
    steps = _check_steps("lstm_sequence", projected, h0, steps)
    extra = (w_hr,) if w_hr is not None else ()
    out_size = w_hr.shape[0] if w_hr is not None else c0.shape[1]
    if projected.ndim != 2 or projected.shape[1] != 4 * c0.shape[1] or h0.shape[1] != out_size \
            or w_hh.shape != (4 * c0.shape[1], out_size):
        raise ValueError(f"lstm_sequence: shapes projected {projected.shape}, h0 {h0.shape}, "
                         f"c0 {c0.shape}, w_hh {w_hh.shape} do not fit (N, 4H), (B, H_out), "
                         f"(B, H), (4H, H_out)")
    return LSTMSequence.apply(projected, h0, c0, w_hh, *extra, steps=steps)


def gru_sequence(projected: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Optional[Tensor] = None,
                 steps=()) -> Tensor:
    """A whole GRU layer direction (GRUSequence): -> h_t (N, H)."""
    steps = _check_steps("gru_sequence", projected, h0, steps)
    if projected.ndim != 2 or projected.shape[1] != 3 * h0.shape[1] \
            or w_hh.shape != (3 * h0.shape[1], h0.shape[1]):
        raise ValueError(f"gru_sequence: shapes projected {projected.shape}, h0 {h0.shape}, "
                         f"w_hh {w_hh.shape} do not fit (N, 3H), (B, H), (3H, H)")
    extra = (b_hh,) if b_hh is not None else ()
    return GRUSequence.apply(projected, h0, w_hh, *extra, steps=steps)


def rnn_sequence(projected: Tensor, h0: Tensor, w_hh: Tensor, steps=(),
                 nonlinearity: str = "tanh") -> Tensor:
    """A whole Elman RNN layer direction (RNNSequence): -> h_t (N, H)."""
    steps = _check_steps("rnn_sequence", projected, h0, steps)
    if nonlinearity not in ("tanh", "relu"):
        raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
    if projected.ndim != 2 or projected.shape[1] != h0.shape[1] \
            or w_hh.shape != (h0.shape[1], h0.shape[1]):
        raise ValueError(f"rnn_sequence: shapes projected {projected.shape}, h0 {h0.shape}, "
                         f"w_hh {w_hh.shape} do not fit (N, H), (B, H), (H, H)")
    return RNNSequence.apply(projected, h0, w_hh, steps=steps, relu=nonlinearity == "relu")


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
