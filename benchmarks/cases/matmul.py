"""float32 matmul, the machine's ceiling: the rate every other case is compared with."""
from __future__ import annotations


import tinyattn
from tinyattn import nn
from tinyattn.tensor import Tensor

from .common import Case, arrays, same, torch

__all__ = ["case_matmul"]


def case_matmul(n: int = 1024) -> Case:
    a, b = arrays((n, n), (n, n))
    ta_a, ta_b = Tensor(a), Tensor(b)
    run_torch = None
    if torch is not None:
        t_a, t_b = torch.from_numpy(a), torch.from_numpy(b)
        same("matmul", ta_a @ ta_b, t_a @ t_b)
        run_torch = lambda: t_a @ t_b  # noqa: E731
    return Case("matmul", f"float32 matmul ({n}, {n}) @ ({n}, {n}), forward (the ceiling)",
                lambda: ta_a @ ta_b, run_torch, flops=2.0 * n ** 3)
