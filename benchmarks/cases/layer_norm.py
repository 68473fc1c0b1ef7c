"""layer_norm forward and backward (weight, bias) beside torch's."""
from __future__ import annotations

from typing import Any, Tuple


import tinyattn
import tinyattn.functional as F
from tinyattn import nn
from tinyattn.tensor import Tensor

from .common import Case, arrays, same, torch

__all__ = ["case_layer_norm"]


def case_layer_norm(shape: Tuple[int, ...] = (8, 256, 512)) -> Case:
    x, g = arrays(shape, shape, seed=4)
    w, bias = arrays(shape[-1:], shape[-1:], seed=5)
    weight_ours, bias_ours = Tensor(w, requires_grad=True), Tensor(bias, requires_grad=True)

    def run_ours() -> Tensor:
        weight_ours.grad = bias_ours.grad = None
        out = F.layer_norm(Tensor(x, requires_grad=True), shape[-1:], weight_ours, bias_ours)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)
        w_t = torch.from_numpy(w).requires_grad_(True)
        b_t = torch.from_numpy(bias).requires_grad_(True)

        def torch_side() -> Any:
            w_t.grad = b_t.grad = None
            out = torch.nn.functional.layer_norm(x_t.clone().requires_grad_(True), shape[-1:],
                                                 w_t, b_t)
            out.backward(g_t)
            return out
        run_torch = torch_side
        same("layer_norm", run_ours(), run_torch())
    return Case("layer_norm", f"layer_norm fwd+bwd (weight, bias) over the last dim of {shape}",
                run_ours, run_torch, target=1.5)
