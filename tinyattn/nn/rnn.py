"""Recurrent layers with PyTorch's names, arguments and parameter layout: ``RNN`` (tanh or
relu), ``LSTM`` (with ``proj_size``), ``GRU`` and the single-step ``RNNCell``, ``LSTMCell``,
``GRUCell`` (docs/nn.md#recurrent-layers, derivations in docs/derivations.md#recurrent-cells).

Shape letters: S sequence length (time steps), B batch, I input features, H hidden features,
P projection size (LSTM's ``proj_size``; H_out = P if P > 0 else H), D = 2 if bidirectional
else 1, L = num_layers, N = total steps of a packed batch (sum of its batch_sizes).

Parameters, as PyTorch names and lays them out (so a state dict loads both ways), for layer
k and direction suffix '' or '_reverse', G = H (RNN), 3H (GRU: r, z, n) or 4H (LSTM: i, f,
g, o): ``weight_ih_l{k}`` (G, I or D*H_out), ``weight_hh_l{k}`` (G, H_out), ``bias_ih_l{k}``
(G), ``bias_hh_l{k}`` (G), ``weight_hr_l{k}`` (P, H). All drawn from U(-1/sqrt(H), 1/sqrt(H)).

How a layer runs (one direction): the input projections of all steps are one matmul,
(N, I) -> (N, G); then one sequence op (ops/rnn.py: LSTMSequence, GRUSequence, RNNSequence)
loops over the steps, and its backward runs them in reverse (BPTT, derived there). A padded
batch is run as a packed one whose batch size never shrinks, so both take the same path.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from ..factories import zeros
from ..ops import cat, dropout as dropout_op, index_select, stack
from ..ops.elementwise import relu, tanh
from ..ops.matmul import linear
from ..ops.rnn import (gru_cell_update, gru_sequence, lstm_cell_update, lstm_sequence,
                       rnn_sequence)
from ..tensor import Tensor, tensor
from .layers import _factory, uniform_parameter
from .module import Module
from .utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _torch_dtype(dtype: Any) -> str:
    return f"torch.{np.dtype(dtype).name}" if dtype is not None else "None"


class RNNBase(Module):
    """What RNN, LSTM and GRU share: the parameters, the checks and the loop over layers and
    directions. ``mode`` is 'RNN_TANH', 'RNN_RELU', 'LSTM' or 'GRU' (PyTorch's)."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        name = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        if isinstance(dropout, bool) or not isinstance(dropout, numbers.Number) \
                or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn(f"dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", UserWarning)
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size),
                           ("num_layers", num_layers), ("proj_size", proj_size)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"{arg} should be of type int, got: {type(value).__name__}")
        for arg, value in (("bias", bias), ("batch_first", batch_first),
                           ("bidirectional", bidirectional)):
            if not isinstance(value, bool):
                raise TypeError(f"{arg} should be of type bool, got: {type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, int(input_size), int(hidden_size)
        self.num_layers, self.bias, self.batch_first = int(num_layers), bool(bias), batch_first
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        self.proj_size = int(proj_size)
        gate_size = _GATES[mode] * hidden_size
        out_size = proj_size if proj_size > 0 else hidden_size           # H_out
        directions = 2 if bidirectional else 1
        bound = 1.0 / math.sqrt(hidden_size)
        self._flat_weights_names: List[str] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else out_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = [(f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                          (f"weight_hh_l{layer}{suffix}", (gate_size, out_size))]
                if bias:
                    shapes += [(f"bias_ih_l{layer}{suffix}", (gate_size,)),
                               (f"bias_hh_l{layer}{suffix}", (gate_size,))]
                if proj_size > 0:
                    shapes.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for param_name, shape in shapes:
                    setattr(self, param_name, uniform_parameter(shape, bound))
                    self._flat_weights_names.append(param_name)
        _factory(self, device, dtype)

    # ------------------------------------------------------------ PyTorch's accessors
    def flatten_parameters(self) -> None:
        """Accepted for PyTorch code (cuDNN's contiguous weight buffer); nothing to do here."""

    @property
    def _flat_weights(self) -> List[Tensor]:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> List[List[Tensor]]:
        """The parameters grouped per layer and direction, as PyTorch's ``all_weights``."""
        per = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional
                                                                     else 1))
        flat = self._flat_weights
        return [flat[i:i + per] for i in range(0, len(flat), per)]

    def reset_parameters(self) -> None:
        """Every parameter drawn again from U(-1/sqrt(H), 1/sqrt(H)), PyTorch's rule."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            fresh = uniform_parameter(weight.shape, bound)
            weight._data[...] = fresh._data.astype(weight.dtype)
            weight._bump_version()

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    # ------------------------------------------------------------ checks
    def _name(self) -> str:
        return {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(self.mode, self.mode)

    def _check_input(self, x: Tensor, packed: bool) -> None:
        weight = self.weight_ih_l0
        if x.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({_torch_dtype(x.dtype)}) does not match weight "
                             f"dtype ({_torch_dtype(weight.dtype)}). Convert input: "
                             f"input.to({_torch_dtype(weight.dtype)}), or convert model: "
                             f"model.to({_torch_dtype(x.dtype)})")
        expected_dim = 2 if packed else 3
        if x.ndim != expected_dim:
            raise RuntimeError(f"input must have {expected_dim} dimensions, got {x.ndim}")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {x.shape[-1]}")

    def _expected_hidden(self, batch: int, cell: bool = False) -> Tuple[int, int, int]:
        directions = 2 if self.bidirectional else 1
        size = self.hidden_size if cell or self.proj_size == 0 else self.proj_size
        return (self.num_layers * directions, batch, size)

    @staticmethod
    def _check_hidden(hx: Tensor, expected: Tuple[int, ...], label: str, dtype: Any) -> None:
        if not isinstance(hx, Tensor):
            raise TypeError(f"{label} must be a Tensor, got {type(hx).__name__}")
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(f"Expected {label} size {tuple(expected)}, got {list(hx.shape)}")
        if hx.dtype != dtype:
            raise RuntimeError(f"{label} has dtype {_torch_dtype(hx.dtype)} but the input and "
                               f"weights are {_torch_dtype(dtype)}; convert it with "
                               f".to({_torch_dtype(dtype)})")

    # ------------------------------------------------------------ forward
    def forward(self, input: Union[Tensor, PackedSequence],  # noqa: A002
                hx: Any = None) -> Tuple[Any, Any]:
        name, is_lstm = self._name(), self.mode == "LSTM"
        packed = isinstance(input, PackedSequence)
        unbatched = False
        if packed:
            data, batch_sizes = input.data, [int(v) for v in input.batch_sizes.numpy()]
            sorted_indices = input.sorted_indices
            batch = batch_sizes[0] if batch_sizes else 0
            if hx is not None and sorted_indices is not None:        # user's order -> sorted
                hx = tuple(index_select(h, 1, sorted_indices) for h in hx) if is_lstm \
                    else index_select(hx, 1, sorted_indices)
        else:
            if not isinstance(input, Tensor):
                raise TypeError(f"{name}: input must be a Tensor or a PackedSequence, got "
                                f"{type(input).__name__}")
            if input.ndim not in (2, 3):
                dims = "got {}D tensor instead" if mode_is_rnn(self.mode) else "got {}D instead"
                raise ValueError(f"{name}: Expected input to be 2D or 3D, "
                                 + dims.format(input.ndim))
            unbatched = input.ndim == 2
            if unbatched:
                input = input.unsqueeze(1 if not self.batch_first else 0)
                hx = self._unbatched_hidden(hx, is_lstm)
            elif hx is not None:
                self._check_batched_hidden(hx, is_lstm)
            if self.batch_first:
                input = input.transpose(0, 1)                         # (B, S, I) -> (S, B, I)
            if input.shape[0] == 0:
                raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
            steps, batch = input.shape[0], input.shape[1]
            batch_sizes = [batch] * steps
            data = input.reshape(steps * batch, input.shape[2])     # (S, B, I) -> (S*B, I)
        self._check_input(data, packed=True)
        h0, c0 = self._initial_states(hx, batch, data, is_lstm)
        out_data, h_n, c_n = self._run_layers(data, batch_sizes, h0, c0)
        if packed:
            if input.unsorted_indices is not None:                  # sorted -> user's order
                h_n = index_select(h_n, 1, input.unsorted_indices)
                c_n = index_select(c_n, 1, input.unsorted_indices) if is_lstm else c_n
            output: Any = PackedSequence(out_data, input.batch_sizes, input.sorted_indices,
                                         input.unsorted_indices)
        else:
            output = out_data.reshape(steps, batch, out_data.shape[-1])   # (S, B, D*H_out)
            if self.batch_first:
                output = output.transpose(0, 1)                     # (S, B, .) -> (B, S, .)
            if unbatched:
                output = output.squeeze(1 if not self.batch_first else 0)
                h_n, c_n = h_n.squeeze(1), (c_n.squeeze(1) if is_lstm else c_n)
        return (output, (h_n, c_n)) if is_lstm else (output, h_n)

    def _unbatched_hidden(self, hx: Any, is_lstm: bool) -> Any:
        if hx is None:
            return None
        if is_lstm:
            h, c = hx
            if h.ndim != 2 or c.ndim != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx and cx should also be 2-D but "
                                   f"got ({h.ndim}-D, {c.ndim}-D) tensors")
            return h.unsqueeze(1), c.unsqueeze(1)
        if hx.ndim != 2:
            raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got "
                               f"{hx.ndim}-D tensor")
        return hx.unsqueeze(1)

    @staticmethod
    def _check_batched_hidden(hx: Any, is_lstm: bool) -> None:
        if is_lstm:
            if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                raise TypeError("LSTM: hx must be a tuple (h_0, c_0) of two tensors")
            h, c = hx
            if h.ndim != 3 or c.ndim != 3:
                raise RuntimeError(f"For batched 3-D input, hx and cx should also be 3-D but "
                                   f"got ({h.ndim}-D, {c.ndim}-D) tensors")
        elif hx.ndim != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got "
                               f"{hx.ndim}-D tensor")

    def _initial_states(self, hx: Any, batch: int, data: Tensor, is_lstm: bool
                        ) -> Tuple[Tensor, Optional[Tensor]]:
        expected = self._expected_hidden(batch)
        if hx is None:
            h0 = zeros(expected, dtype=data.dtype, device=data.device)
            c0 = zeros(self._expected_hidden(batch, cell=True), dtype=data.dtype,
                       device=data.device) if is_lstm else None
            return h0, c0
        if is_lstm:
            h0, c0 = hx
            self._check_hidden(h0, expected, "hidden[0]", data.dtype)
            self._check_hidden(c0, self._expected_hidden(batch, cell=True), "hidden[1]",
                               data.dtype)
            return h0, c0
        self._check_hidden(hx, expected, "hidden", data.dtype)
        return hx, None

    def _run_layers(self, data: Tensor, batch_sizes: List[int], h0: Tensor,
                    c0: Optional[Tensor]) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        directions = 2 if self.bidirectional else 1
        last_h, last_c = [], []
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(("", "_reverse")[:directions]):
                index = layer * directions + direction
                out, h_n, c_n = self._run_direction(
                    data, batch_sizes, layer, suffix, h0[index],
                    None if c0 is None else c0[index], reverse=direction == 1)
                outputs.append(out)
                last_h.append(h_n)
                last_c.append(c_n)
            data = outputs[0] if directions == 1 else cat(outputs, dim=1)   # (N, D*H_out)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                data = dropout_op(data, self.dropout, training=True)
        h_n = stack(last_h, dim=0)                                  # (L*D, B, H_out)
        c_n = stack(last_c, dim=0) if c0 is not None else None      # (L*D, B, H)
        return data, h_n, c_n

    def _run_direction(self, data: Tensor, batch_sizes: List[int], layer: int, suffix: str,
                       h0: Tensor, c0: Optional[Tensor], reverse: bool
                       ) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        """One layer in one direction over a packed batch: (N, I) -> (N, H_out), h_n, c_n."""
        w_ih = getattr(self, f"weight_ih_l{layer}{suffix}")
        w_hh = getattr(self, f"weight_hh_l{layer}{suffix}")
        b_ih = getattr(self, f"bias_ih_l{layer}{suffix}", None) if self.bias else None
        b_hh = getattr(self, f"bias_hh_l{layer}{suffix}", None) if self.bias else None
        w_hr = getattr(self, f"weight_hr_l{layer}{suffix}", None) if self.proj_size else None
        projected = linear(data, w_ih, b_ih)                # (N, I) -> (N, G), all steps at once
        if b_hh is not None and self.mode != "GRU":         # GRU's b_hn sits inside r * (.)
            projected = projected + b_hh
        starts = np.concatenate([[0], np.cumsum(batch_sizes, dtype=np.int64)]).astype(int)
        order = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
        steps = [(int(starts[t]), batch_sizes[t]) for t in order]
        # the packed row of each sequence's last step (in the order the steps run)
        last_rows = np.zeros(h0.shape[0], dtype=np.int64)
        for start, size in steps:
            last_rows[:size] = start + np.arange(size)
        last = tensor(last_rows, device=data.device)
        if self.mode == "LSTM":
            joined = lstm_sequence(projected, h0, c0, w_hh, w_hr, steps=steps)  # (N, H_out + H)
            out_size = h0.shape[1]
            final = index_select(joined, 0, last)                   # (B, H_out + H)
            return joined[:, :out_size], final[:, :out_size], final[:, out_size:]
        if self.mode == "GRU":
            out = gru_sequence(projected, h0, w_hh, b_hh, steps=steps)          # (N, H)
        else:
            out = rnn_sequence(projected, h0, w_hh, steps=steps,
                               nonlinearity="relu" if self.mode == "RNN_RELU" else "tanh")
        return out, index_select(out, 0, last), None


def mode_is_rnn(mode: str) -> bool:
    return mode.startswith("RNN_")


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu), stacked
    ``num_layers`` deep. ``input`` (S, B, I) ((B, S, I) with batch_first; (S, I) unbatched) or
    a PackedSequence; ``h_0`` (D*L, B, H), zeros by default. Returns (output (S, B, D*H),
    h_n (D*L, B, H))."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:               # PyTorch's order: (I, H, num_layers, nonlinearity, ...)
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' "
                             f"or 'relu'.")
        super().__init__(mode, *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory (gates i, f, g, o; docs/derivations.md#recurrent-cells), with
    PyTorch's arguments including ``proj_size``. ``hx`` = (h_0 (D*L, B, H_out), c_0 (D*L, B,
    H)). Returns (output (S, B, D*H_out), (h_n, c_n))."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit with PyTorch's formula (gates r, z, n; the reset gate multiplies
    W_hn h + b_hn). Returns (output (S, B, D*H), h_n (D*L, B, H))."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ---------------------------------------------------------------------------- cells
class RNNCellBase(Module):
    """One step of a recurrent layer: parameters ``weight_ih`` (G, I), ``weight_hh`` (G, H),
    ``bias_ih``, ``bias_hh`` (G), PyTorch's names and U(-1/sqrt(H), 1/sqrt(H)) init."""

    _gates = 1

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        bound = 1.0 / math.sqrt(hidden_size)
        gate_size = self._gates * hidden_size
        self.weight_ih = uniform_parameter((gate_size, input_size), bound)
        self.weight_hh = uniform_parameter((gate_size, hidden_size), bound)
        if bias:
            self.bias_ih = uniform_parameter((gate_size,), bound)
            self.bias_hh = uniform_parameter((gate_size,), bound)
        else:
            self.bias_ih = self.bias_hh = None
        _factory(self, device, dtype)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            weight._data[...] = uniform_parameter(weight.shape, bound)._data.astype(weight.dtype)
            weight._bump_version()

    def _prepare(self, input: Tensor, hx: Any, is_lstm: bool  # noqa: A002
                 ) -> Tuple[Tensor, Any, bool]:
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if hx is not None:
            for index, h in enumerate(hx if is_lstm else (hx,)):
                if h.ndim not in (1, 2):
                    label = f"hx[{index}]" if is_lstm else "hidden"
                    raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.ndim}D "
                                     f"instead")
        unbatched = input.ndim == 1
        if unbatched:
            input = input.unsqueeze(0)
            if hx is not None:
                hx = tuple(h.unsqueeze(0) for h in hx) if is_lstm else hx.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        batch = input.shape[0]
        if hx is None:
            make = (lambda: zeros((batch, self.hidden_size), dtype=input.dtype,
                                  device=input.device))
            hx = (make(), make()) if is_lstm else make()
        for index, h in enumerate(hx if is_lstm else (hx,)):
            if h.ndim != 2 or h.shape[0] != batch:
                raise RuntimeError(f"Input batch size {batch} doesn't match hidden{index} "
                                   f"batch size {h.shape[0]}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{index} has inconsistent hidden_size: got "
                                   f"{h.shape[1]}, expected {self.hidden_size}")
        return input, hx, unbatched


class RNNCell(RNNCellBase):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu); input (B, I) or (I,)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:  # noqa: A002
        input, hx, unbatched = self._prepare(input, hx, is_lstm=False)
        pre = linear(input, self.weight_ih, self.bias_ih) + linear(hx, self.weight_hh,
                                                                   self.bias_hh)
        if self.nonlinearity == "tanh":
            h = tanh(pre)
        elif self.nonlinearity == "relu":
            h = relu(pre)
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}; use 'tanh' or "
                               f"'relu'")
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    """One LSTM step: (input (B, I), (h, c)) -> (h', c'), gates i, f, g, o."""

    _gates = 4

    def forward(self, input: Tensor, hx: Any = None) -> Tuple[Tensor, Tensor]:  # noqa: A002
        input, (h, c), unbatched = self._prepare(input, hx, is_lstm=True)
        gates = linear(input, self.weight_ih, self.bias_ih) + linear(h, self.weight_hh,
                                                                     self.bias_hh)
        joined = lstm_cell_update(gates, c)                        # (B, 2H): h' | c'
        h, c = joined[:, :self.hidden_size], joined[:, self.hidden_size:]
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    """One GRU step: (input (B, I), h) -> h', gates r, z, n (PyTorch's formula)."""

    _gates = 3

    def forward(self, input: Tensor, hx: Optional[Tensor] = None) -> Tensor:  # noqa: A002
        input, hx, unbatched = self._prepare(input, hx, is_lstm=False)
        h = gru_cell_update(linear(input, self.weight_ih, self.bias_ih),
                            linear(hx, self.weight_hh, self.bias_hh), hx)
        return h.squeeze(0) if unbatched else h
