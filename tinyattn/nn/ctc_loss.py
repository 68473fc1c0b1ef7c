"""``nn.CTCLoss``, as PyTorch's (docs/nn.md#losses): no parameters; the op is
ops/ctc_loss.py, whose forward and backward recursions are derived there."""
from __future__ import annotations

from typing import Any

from .. import functional as F
from ..tensor import Tensor
from .loss import _Loss

__all__ = ["CTCLoss"]


class CTCLoss(_Loss):
    """Connectionist temporal classification: log_probs (T, N, C) (log_softmax over C),
    targets (N, S) or concatenated, input_lengths and target_lengths (N,); the loss sums
    over every alignment of each target to its T_n steps."""

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(None, None, reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Any,
                target_lengths: Any) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)
