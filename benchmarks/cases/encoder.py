"""TransformerEncoderLayer forward and backward beside torch's."""
from __future__ import annotations

from typing import Any


import tinyattn
from tinyattn import nn
from tinyattn.tensor import Tensor

from .common import Case, arrays, linear_flops, load_into_torch, mha_flops, same, torch

__all__ = ["case_encoder"]


def case_encoder(b: int = 8, s: int = 256, d: int = 512, h: int = 8, d_ff: int = 2048) -> Case:
    x, g = arrays((b, s, d), (b, s, d), seed=1)
    tinyattn.manual_seed(0)
    ours = nn.TransformerEncoderLayer(d, h, dim_feedforward=d_ff, dropout=0.0,
                                      batch_first=True)   # (B, S, D) on both sides

    def run_ours() -> Tensor:
        xt = Tensor(x, requires_grad=True)
        out = ours(xt)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        theirs = torch.nn.TransformerEncoderLayer(d, h, dim_feedforward=d_ff, dropout=0.0,
                                                  batch_first=True)
        load_into_torch(theirs, ours)
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)

        def torch_side() -> Any:
            xt = x_t.clone().requires_grad_(True)
            out = theirs(xt)
            out.backward(g_t)
            return out
        run_torch = torch_side
        same("encoder", run_ours(), run_torch())
    flops = mha_flops(b, s, d, h) + 2 * linear_flops(b * s, d, d_ff)
    return Case("encoder", f"TransformerEncoderLayer fwd+bwd, B={b} S={s} D={d} h={h} "
                f"d_ff={d_ff}", run_ours, run_torch, flops=flops)
