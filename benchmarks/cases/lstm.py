"""One LSTM layer's forward and backward (S=128, B=32, hidden 256 by default): the input
projection as one matmul, then the recurrent loop of LSTMSequence and its reverse loop
(tinyattn/ops/rnn.py), against torch's CPU LSTM from the same weights. Target: 1.5x."""
from __future__ import annotations

from typing import Any

from tinyattn import nn
from tinyattn.tensor import Tensor

from .common import Case, arrays, same, torch

__all__ = ["case_lstm"]


def case_lstm(s: int = 128, b: int = 32, hidden: int = 256) -> Case:
    x, = arrays((s, b, hidden), seed=32)
    ours = nn.LSTM(hidden, hidden)

    def run_ours() -> Tensor:
        inputs = Tensor(x, requires_grad=True)
        out, _ = ours(inputs)
        out.sum().backward()
        return out

    run_torch = None
    if torch is not None:
        theirs = torch.nn.LSTM(hidden, hidden)
        theirs.load_state_dict({k: torch.from_numpy(v.numpy())
                                for k, v in ours.state_dict().items()})

        def torch_side() -> Any:
            inputs = torch.from_numpy(x).requires_grad_(True)
            out, _ = theirs(inputs)
            out.sum().backward()
            return out
        run_torch = torch_side
        same("lstm", run_ours(), run_torch())
    # per step: (B, H) @ (H, 4H) forward; dW_hh and dh backward; plus the input projection
    flops = 3 * 2.0 * s * b * hidden * 4 * hidden * 2
    return Case("lstm", f"nn.LSTM({hidden}, {hidden}) forward + backward, S={s}, B={b}",
                run_ours, run_torch, flops=flops, target=1.5)
