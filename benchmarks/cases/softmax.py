"""softmax forward and backward over the last dimension beside torch.softmax."""
from __future__ import annotations

from typing import Any, Tuple


import tinyattn
import tinyattn.functional as F
from tinyattn import nn
from tinyattn.tensor import Tensor

from .common import Case, arrays, same, torch

__all__ = ["case_softmax"]


def case_softmax(shape: Tuple[int, ...] = (8, 8, 256, 256)) -> Case:
    x, g = arrays(shape, shape, seed=3)

    def run_ours() -> Tensor:
        out = F.softmax(Tensor(x, requires_grad=True), dim=-1)
        out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        x_t, g_t = torch.from_numpy(x), torch.from_numpy(g)

        def torch_side() -> Any:
            out = torch.softmax(x_t.clone().requires_grad_(True), dim=-1)
            out.backward(g_t)
            return out
        run_torch = torch_side
        same("softmax", run_ours(), run_torch())
    return Case("softmax", f"softmax fwd+bwd over the last dim of {shape}", run_ours, run_torch,
                target=1.5)
