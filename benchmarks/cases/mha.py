"""MultiHeadAttention forward and backward beside torch.nn.MultiheadAttention."""
from __future__ import annotations

from typing import Any


import tinyattn
from tinyattn import nn
from tinyattn.tensor import Tensor

from .common import Case, arrays, load_into_torch, mha_flops, same, torch

__all__ = ["case_mha"]


def case_mha(b: int = 8, s: int = 256, d: int = 512, h: int = 8) -> Case:
    x, g = arrays((b, s, d), (b, s, d))
    tinyattn.manual_seed(0)
    ours = nn.MultiHeadAttention(d, h)

    def run_ours() -> Tensor:
        xt = Tensor(x, requires_grad=True)
        out, _ = ours(xt, need_weights=False)            # self-attention, (B, S, D)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        theirs = torch.nn.MultiheadAttention(d, h, batch_first=True)
        load_into_torch(theirs, ours)
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)

        def torch_side() -> Any:
            xt = x_t.clone().requires_grad_(True)
            out, _ = theirs(xt, xt, xt, need_weights=False)
            out.backward(g_t)
            return out
        run_torch = torch_side
        same("mha", run_ours(), run_torch())
    return Case("mha", f"MultiHeadAttention fwd+bwd, B={b} S={s} D={d} h={h}", run_ours,
                run_torch, flops=mha_flops(b, s, d, h), target=0.8)
