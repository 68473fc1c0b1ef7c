"""``tinyattn.distributions``: ``Categorical``, the distribution of policy-gradient programs
(pytorch/examples' reinforce.py and actor_critic.py: ``m = Categorical(probs); a = m.sample();
m.log_prob(a)``) and of sampling code (``Categorical(logits=...).sample()``).

PyTorch's meaning, composed of tinyattn's differentiable ops (so gradients need no new
backward): ``probs`` are normalised along the last dim (``probs / probs.sum(-1)``), ``logits``
are normalised log-probabilities (``logits - logits.logsumexp(-1)``); given probs, the logits
are ``log(probs)`` with probs clamped to [eps, 1 - eps] of their dtype; given logits, probs
are ``softmax(logits)``. ``log_prob(value)`` picks the logits of the categories (broadcast
against the batch), ``entropy()`` is ``-(logits * probs).sum(-1)`` with logits clamped at the
dtype's min (so a zero probability adds 0, not NaN). Arguments are validated as torch does
by default (ValueError). ``sample`` draws with ``multinomial(..., replacement=True)``: the
same law, NumPy's random stream (docs/pytorch.md).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .factories import multinomial
from .ops import gather, softmax
from .tensor import Tensor

__all__ = ["Distribution", "Categorical"]


class Distribution:
    """The base of tinyattn's distributions (torch.distributions.Distribution's role)."""

    has_rsample = False

    def __init__(self, batch_shape: Any = (), event_shape: Any = (),
                 validate_args: Optional[bool] = None):
        self._batch_shape = batch_shape            # a tensor's shape: torch.Size under run-torch
        self._event_shape = event_shape
        self._validate_args = True if validate_args is None else bool(validate_args)

    @property
    def batch_shape(self) -> Any:
        return self._batch_shape

    @property
    def event_shape(self) -> Any:
        return self._event_shape

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _finfo(dtype: Any) -> Any:
    return np.finfo(np.dtype(dtype))


class Categorical(Distribution):
    """A categorical distribution over ``0 .. K-1`` along the last dim of ``probs`` or
    ``logits`` (exactly one of them), as ``torch.distributions.Categorical``."""

    def __init__(self, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        if not isinstance(given, Tensor):
            raise TypeError(f"Categorical: {'probs' if probs is not None else 'logits'} must "
                            f"be a tensor, got {type(given).__name__}")
        if given.ndim < 1:
            raise ValueError("`probs` parameter must be at least one-dimensional."
                             if probs is not None else
                             "`logits` parameter must be at least one-dimensional.")
        super().__init__(given.shape[:-1], given.shape[:0], validate_args)
        if probs is not None:
            self._probs = probs / probs.sum(-1, keepdim=True)
            self._logits: Optional[Tensor] = None
            if self._validate_args:
                p = self._probs.detach().numpy()
                if not (np.all(p >= 0) and np.allclose(p.sum(-1), 1.0, atol=1e-6)):
                    raise ValueError(
                        f"Expected parameter probs (Tensor of shape {tuple(probs.shape)}) of "
                        f"distribution Categorical(probs: {tuple(probs.shape)}) to satisfy the "
                        f"constraint Simplex(), but found invalid values:\n{probs}")
        else:
            if self._validate_args and bool(np.any(np.isnan(logits.detach().numpy()))):
                raise ValueError(
                    f"Expected parameter logits (Tensor of shape {tuple(logits.shape)}) of "
                    f"distribution Categorical(logits: {tuple(logits.shape)}) to satisfy the "
                    f"constraint IndependentConstraint(Real(), 1), but found invalid "
                    f"values:\n{logits}")
            self._logits = logits - logits.logsumexp(-1, keepdim=True)
            self._probs = None
        self._num_events = int(given.shape[-1])

    @property
    def probs(self) -> Tensor:
        if self._probs is None:
            self._probs = softmax(self._logits, -1)
        return self._probs

    @property
    def logits(self) -> Tensor:
        if self._logits is None:
            eps = float(_finfo(self._probs.dtype).eps)
            self._logits = self._probs.clamp(min=eps, max=1 - eps).log()
        return self._logits

    @property
    def param_shape(self) -> Tuple[int, ...]:
        return tuple(self.probs.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs.new_full(tuple(self._batch_shape), float("nan"))

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def support(self) -> Any:
        return range(self._num_events)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        shape = (tuple(sample_shape) if not isinstance(sample_shape, int)
                 else (sample_shape,))
        n = int(np.prod(shape)) if shape else 1
        with _no_grad():
            rows = self.probs.detach().reshape(-1, self._num_events)
            drawn = multinomial(rows, n, True).T          # (n, batch...)
        return drawn.reshape(shape + tuple(self._batch_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if not isinstance(value, Tensor):
            raise TypeError(f"Categorical.log_prob: value must be a tensor, got "
                            f"{type(value).__name__}")
        if self._validate_args:
            v = value.detach().numpy()
            if not (np.all(v == np.floor(v)) and np.all(v >= 0)
                    and np.all(v < self._num_events)):
                raise ValueError(
                    f"Expected value argument (Tensor of shape {tuple(value.shape)}) to be "
                    f"within the support (IntegerInterval(lower_bound=0, upper_bound="
                    f"{self._num_events - 1})) of the distribution {self!r}, but found "
                    f"invalid values:\n{value}")
        value = value.long().unsqueeze(-1)
        logits = self.logits
        shape = np.broadcast_shapes(tuple(value.shape), tuple(logits.shape[:-1]) + (1,))
        value = value.expand(*shape)
        logits = logits.expand(*(shape[:-1] + (self._num_events,)))
        return gather(logits, -1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        floor = float(_finfo(self.logits.dtype).min)
        return -(self.logits.clamp(min=floor) * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        from .factories import arange                     # noqa: PLC0415
        values = arange(self._num_events).reshape((-1,) + (1,) * len(tuple(self._batch_shape)))
        return values.expand(-1, *self._batch_shape) if expand else values

    def __repr__(self) -> str:
        """torch's: the parameters computed so far (probs first), with their shapes."""
        known = [(n, t) for n, t in (("probs", self._probs), ("logits", self._logits))
                 if t is not None]
        return "Categorical(" + ", ".join(f"{n}: {t.shape}" for n, t in known) + ")"


def _no_grad() -> Any:
    from .autograd import no_grad                          # noqa: PLC0415
    return no_grad()
