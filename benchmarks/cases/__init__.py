"""The benchmark cases, one module per case (benchmarks/run.py times them; docs/benchmarks.md
shows the table). Each module builds the same work in tinyattn and in torch and checks that
both agree before anything is timed."""
from __future__ import annotations

from typing import Callable, Dict

from .common import Case
from .encoder import case_encoder
from .gpt import case_gpt
from .layer_norm import case_layer_norm
from .lstm import case_lstm
from .matmul import case_matmul
from .mha import case_mha
from .small_op import case_small_op
from .softmax import case_softmax

__all__ = ["Case", "build_cases", "CASES"]


def build_cases(quick: bool, tiny: bool = False) -> Dict[str, Callable[[], Case]]:
    """Case builders by name, in table order (built lazily: --cases builds only those).
    ``tiny``: every case at a toy size, so a smoke test runs all of them in seconds."""
    inner = 2 if tiny else 200 if quick else 2000
    if tiny:
        return {
            "matmul": lambda: case_matmul(n=16),
            "mha": lambda: case_mha(b=2, s=8, d=16, h=2),
            "encoder": lambda: case_encoder(b=2, s=8, d=16, h=2, d_ff=32),
            "gpt_tiny": lambda: case_gpt("gpt_tiny", d=16, layers=1, s=8, b=2, h=2),
            "gpt_medium": lambda: case_gpt("gpt_medium", d=16, layers=2, s=8, b=2, h=2),
            "softmax": lambda: case_softmax((2, 2, 8, 8)),
            "layer_norm": lambda: case_layer_norm((2, 8, 16)),
            "small_op_fwd": lambda: case_small_op(False, inner),
            "small_op_fwd_bwd": lambda: case_small_op(True, inner),
            "lstm": lambda: case_lstm(s=4, b=2, hidden=8),
        }
    return {
        "matmul": case_matmul,
        "mha": case_mha,
        "encoder": case_encoder,
        "gpt_tiny": lambda: case_gpt("gpt_tiny", d=64, layers=2, s=32, b=16, h=4),
        "gpt_medium": lambda: case_gpt("gpt_medium", d=256, layers=4, s=128, b=8, h=8,
                                            target=0.95),
        "softmax": case_softmax,
        "layer_norm": case_layer_norm,
        "small_op_fwd": lambda: case_small_op(False, inner),
        "small_op_fwd_bwd": lambda: case_small_op(True, inner),
        "lstm": case_lstm,
    }


CASES = list(build_cases(quick=False))
