"""Loss modules with PyTorch's names and arguments (docs/nn.md#losses).

Each one keeps its options and calls one function of ``tinyattn.functional``, where the
backward is derived: ``CrossEntropyLoss`` -> ``F.cross_entropy``, ``NLLLoss`` ->
``F.nll_loss``, ``MSELoss`` -> ``F.mse_loss``, ``L1Loss`` -> ``F.l1_loss``, ``BCELoss`` ->
``F.binary_cross_entropy``, ``BCEWithLogitsLoss`` -> ``F.binary_cross_entropy_with_logits``.
``reduction`` is "mean" (default), "sum" or "none". Class weights (``weight``, and
``pos_weight``) are buffers, as in PyTorch: they move with ``.to()`` and are in the state
dict. PyTorch's deprecated ``size_average`` and ``reduce`` arguments are refused.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from .. import functional as F
from ..tensor import Tensor
from .module import Module

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "BCELoss", "BCEWithLogitsLoss",
           "KLDivLoss", "HuberLoss", "SmoothL1Loss", "MultiMarginLoss",
           "MultiLabelMarginLoss"]

_REDUCTIONS = ("mean", "sum", "none")


class _Loss(Module):
    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = "mean"):
        name = type(self).__name__
        if size_average is not None or reduce is not None:
            raise ValueError(f"{name}: size_average and reduce are deprecated in PyTorch and "
                             f"not supported here; use reduction='mean', 'sum' or 'none'")
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got "
                             f"{reduction!r}")
        self.reduction = reduction

    def _register_weight(self, name: str, weight: Optional[Tensor]) -> None:
        if weight is not None and not isinstance(weight, Tensor):
            raise TypeError(f"{type(self).__name__}: {name} must be a Tensor or None, got "
                            f"{type(weight).__name__}")
        self.register_buffer(name, weight)

    def _weights(self, *names: str) -> Dict[str, Tensor]:
        """The weight keywords that are set (those left None are not passed on)."""
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def extra_repr(self) -> str:
        return ""              # torch prints a loss without its options: ``MSELoss()``


class CrossEntropyLoss(_Loss):
    """log_softmax + negative log-likelihood, ``F.cross_entropy``: logits (N, C) with class
    ids (N,), or (N, C, d1, ...) with (N, d1, ...), or class probabilities of the logits'
    shape; ``ignore_index``, ``label_smoothing`` and per-class ``weight`` as PyTorch."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean",
                 label_smoothing: float = 0.0):
        super().__init__(size_average, reduce, reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be in [0, 1], got "
                             f"{label_smoothing}")
        self._register_weight("weight", weight)
        self.ignore_index, self.label_smoothing = int(ignore_index), float(label_smoothing)

    def forward(self, input: Tensor, target: Any) -> Tensor:  # noqa: A002 - PyTorch's name
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities (N, C) at class ids (N,), ``F.nll_loss``;
    pair it with ``LogSoftmax(dim=1)`` (together: CrossEntropyLoss)."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self._register_weight("weight", weight)
        self.ignore_index = int(ignore_index)

    def forward(self, input: Tensor, target: Any) -> Tensor:  # noqa: A002
        return F.nll_loss(input, target, ignore_index=self.ignore_index,
                          reduction=self.reduction, **self._weights("weight"))


class MSELoss(_Loss):
    """Mean squared error, ``F.mse_loss``: mean((input - target)^2)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error, ``F.l1_loss``: mean(|input - target|)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities in [0, 1], ``F.binary_cross_entropy``. Prefer
    BCEWithLogitsLoss on raw scores: it is stable where sigmoid saturates."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self._register_weight("weight", weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy(input, target, reduction=self.reduction,
                                      **self._weights("weight"))


class BCEWithLogitsLoss(_Loss):
    """sigmoid + binary cross-entropy in one stable op,
    ``F.binary_cross_entropy_with_logits``; ``pos_weight`` (one per class) scales the
    positive term."""

    def __init__(self, weight: Optional[Tensor] = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean",
                 pos_weight: Optional[Tensor] = None):
        super().__init__(size_average, reduce, reduction)
        self._register_weight("weight", weight)
        self._register_weight("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, reduction=self.reduction,
                                                  **self._weights("weight", "pos_weight"))


class KLDivLoss(_Loss):
    """Kullback-Leibler divergence, ``F.kl_div``: input holds log-probabilities, target
    probabilities (log-probabilities with ``log_target=True``). reduction "batchmean" is the
    mathematical KL divergence; "mean" divides by every element (and warns, as PyTorch)."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 log_target: bool = False):
        if reduction == "batchmean":          # _Loss knows mean, sum and none
            super().__init__(size_average, reduce, "mean")
            self.reduction = "batchmean"
        else:
            super().__init__(size_average, reduce, reduction)
        self.log_target = bool(log_target)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SmoothL1Loss(_Loss):
    """``F.smooth_l1_loss``: 0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """``F.huber_loss``: 0.5 d^2 where |d| < delta, delta (|d| - 0.5 delta) elsewhere."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        if isinstance(delta, bool) or not isinstance(delta, (int, float)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class MultiMarginLoss(_Loss):
    """``F.multi_margin_loss``: the multi-class hinge loss of scores (N, C) or (C,) at class
    ids (N,) or (): sum over i != y of max(0, margin - x[y] + x[i])^p / C."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Optional[Tensor] = None,
                 size_average: Any = None, reduce: Any = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and isinstance(weight, Tensor) and weight.ndim != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.ndim}D instead")
        self._register_weight("weight", weight)
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """``F.multilabel_margin_loss``: target rows hold class ids ended by the first -1; the
    loss sums max(0, 1 - (x[j] - x[i])) over target classes j and non-target classes i, / C."""

    def __init__(self, size_average: Any = None, reduce: Any = None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)
