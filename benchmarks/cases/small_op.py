"""One small op (a * b on 4 elements): the per-op Python and graph bookkeeping,
which dominates small models. Function.apply's cost is what this measures."""
from __future__ import annotations

from typing import Any


import tinyattn
from tinyattn import nn
from tinyattn.tensor import Tensor

from .common import Case, arrays, same, torch

__all__ = ["case_small_op"]


def case_small_op(backward: bool, inner: int) -> Case:
    """One multiply of two 4-element tensors that require grad: the cost of an op's Python
    and graph bookkeeping, which dominates small models."""
    a, b, g = arrays((4,), (4,), (4,), seed=6)
    ta_a, ta_b = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)

    def run_ours() -> Tensor:
        out = ta_a * ta_b
        if backward:
            out.backward(g)
        return out

    run_torch = None
    if torch is not None:
        t_a = torch.from_numpy(a).requires_grad_(True)
        t_b = torch.from_numpy(b).requires_grad_(True)
        g_t = torch.from_numpy(g)

        def torch_side() -> Any:
            out = t_a * t_b
            if backward:
                out.backward(g_t)
            return out
        run_torch = torch_side
        same("small_op", run_ours(), run_torch())
    name = "small_op_fwd_bwd" if backward else "small_op_fwd"
    what = "forward + backward" if backward else "forward (graph recorded)"
    return Case(name, f"one small op, a * b on 4 elements, {what}", run_ours, run_torch,
                target=1.0, inner=inner)
