"""``F.ctc_loss``: connectionist temporal classification (Graves et al., 2006), the loss of
speech and handwriting models whose outputs are not aligned with their targets
(docs/derivations.md#ctc-loss).

Shapes: log_probs (T, N, C) (log-softmax over C; (T, C) unbatched), targets (N, S) padded or
the (sum of target_lengths,) concatenation, input_lengths and target_lengths (N,). The
extended target l' of a sample is its L labels with a blank before, between and after them
(2L + 1 positions); its forward variables alpha and backward variables beta run over l'.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import backend
from ..amp.dispatch import cast_args
from ..autograd import Function
from ..precision import is_floating
from ..tensor import Tensor

__all__ = ["ctc_loss"]


def _logsumexp(*terms: Any) -> Any:
    xp = backend.get_array_module(terms[0])
    stacked = xp.stack(terms)
    top = stacked.max(axis=0)
    safe = xp.where(xp.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = xp.exp(stacked - safe).sum(axis=0)
        return xp.where(xp.isneginf(top), -xp.inf, xp.log(total) + safe)


def _shift(a: Any, by: int) -> Any:
    """a[..., s - by] along the last axis, -inf where s - by is outside (by > 0: from the
    left; by < 0: from the right)."""
    out = backend.get_array_module(a).full_like(a, -np.inf)
    if by > 0:
        out[..., by:] = a[..., :-by]
    else:
        out[..., :by] = a[..., -by:]
    return out


class CTCLoss(Function):
    """nll_n = -log sum over the alignments of l'_n of prod_t y_t(label), by the forward
    recursion (log space, t = 1 .. T_n - 1, s over l'):
        alpha_t(s) = lp_t(l'_s) + lse(alpha_{t-1}(s), alpha_{t-1}(s-1), [skip] alpha_{t-1}(s-2)),
    the skip allowed when l'_s is a label different from l'_{s-2}; nll = -lse(alpha_{T-1}(2L),
    alpha_{T-1}(2L - 1)). beta is the same recursion run backwards, so that (as torch defines
    both, each including lp_t(l'_s)) alpha_t(s) + beta_t(s) - lp_t(l'_s) is the log-probability
    of the alignments through (t, s). With lcab_t(c) = lse over s with l'_s = c of
    alpha_t(s) + beta_t(s), the derivative of nll with respect to lp_t(c) is
    -exp(lcab_t(c) + nll - lp_t(c)); torch's kernel returns that plus exp(lp_t(c)), the
    gradient for inputs that are a log_softmax (the extra term sums to zero through it), and
    so does this. Times the sample's upstream gradient; 0 for t >= T_n, and 0 for a sample
    whose nll is inf when zero_infinity=True. Saved: log_probs and targets (as torch's), alpha.
    """

    def forward(self, log_probs, targets, *, input_lengths, target_lengths, blank,
                zero_infinity):
        xp = backend.get_array_module(log_probs)
        device = backend.device_of(log_probs)
        lp = log_probs.astype(np.float64)
        steps, batch, _ = lp.shape
        padded = _padded_targets(backend.to_host(targets), target_lengths, batch)  # (N, S)
        extended = _extended_labels(padded, target_lengths, blank)          # (N, S')
        skip = np.zeros_like(extended, dtype=bool)
        skip[:, 2:] = (extended[:, 2:] != blank) & (extended[:, 2:] != extended[:, :-2])
        valid = np.arange(extended.shape[1])[None, :] <= 2 * target_lengths[:, None]
        ends = 2 * target_lengths
        # (host arrays built from the lengths, moved to the device once)
        extended, skip, valid, ends, input_lengths = (
            backend.to_device(a, device) for a in (extended, skip, valid, ends, input_lengths))
        rows = xp.arange(batch)[:, None]
        alpha = xp.full((steps,) + extended.shape, -np.inf)               # (T, N, S')
        first = lp[0][rows, extended]
        alpha[0] = xp.where(xp.arange(extended.shape[1])[None, :] < xp.minimum(ends + 1, 2)
                            [:, None], first, -np.inf)
        for t in range(1, steps):
            before = alpha[t - 1]
            step = lp[t][rows, extended] + _logsumexp(
                before, _shift(before, 1), xp.where(skip, _shift(before, 2), -np.inf))
            alpha[t] = xp.where(valid & (t < input_lengths)[:, None], step, -np.inf)
        last = alpha[input_lengths - 1, xp.arange(batch)]                    # (N, S')
        columns = xp.arange(extended.shape[1])[None, :]
        at_end = (columns == ends[:, None]) | ((columns == ends[:, None] - 1) & (ends > 0)
                                                [:, None])
        nll = -_logsumexp(*xp.where(at_end, last, -np.inf).T)     # over the two end cells
        nll = xp.where(input_lengths == 0, -0.0, nll)     # no steps: torch's kernel gives -0
        infinite = xp.isinf(nll)
        out = nll.astype(log_probs.dtype)
        # torch saves the nll it returns (so writing to that output breaks backward), but
        # with zero_infinity it returns a new tensor, where(inf, 0, nll), and keeps the nll
        saved_nll = out if not zero_infinity else out.copy()
        if zero_infinity:
            out = xp.where(infinite, 0.0, out).astype(log_probs.dtype)
        self.save_for_backward(log_probs, targets, alpha, extended, skip, valid, saved_nll,
                               input_lengths, infinite & zero_infinity, at_end)
        return out

    def backward(self, grad):
        (log_probs, _, alpha, extended, skip, valid, nll, input_lengths, zeroed,
         at_end) = self.saved
        xp = backend.get_array_module(log_probs)
        lp = log_probs.astype(np.float64)
        steps, batch, classes = lp.shape
        rows = xp.arange(batch)[:, None]
        skip_back = xp.zeros_like(skip)
        skip_back[:, :-2] = skip[:, 2:]           # beta_t(s) reads beta_{t+1}(s + 2) then
        beta = xp.full_like(alpha, -np.inf)
        for t in range(steps - 1, -1, -1):
            emit = lp[t][rows, extended]
            later = beta[t + 1] if t + 1 < steps else xp.full_like(emit, -np.inf)
            step = emit + _logsumexp(later, _shift(later, -1),
                                     xp.where(skip_back, _shift(later, -2), -np.inf))
            last_step = (t == input_lengths - 1)[:, None]           # t = T_n - 1: the ends
            inside = (t < input_lengths - 1)[:, None]
            beta[t] = xp.where(last_step, xp.where(at_end, emit, -np.inf),
                               xp.where(inside & valid, step, -np.inf))
        both = alpha + beta                                                # (T, N, S')
        top = xp.where(xp.isfinite(both), both, -np.inf).max(axis=2)
        shift = xp.where(xp.isfinite(top), top, 0.0)[..., None]
        summed = xp.zeros((steps, batch, classes))
        index = (xp.arange(steps)[:, None, None], rows[None], extended[None])
        backend.scatter_add(summed, index, xp.exp(both - shift))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lcab = xp.log(summed) + shift
            dlp = xp.exp(lp) - xp.exp(lcab + nll.astype(np.float64)[None, :, None] - lp)
        dlp = dlp * grad.astype(np.float64)[None, :, None]
        counted = (xp.arange(steps)[:, None] < input_lengths[None, :])[..., None]
        dlp = xp.where(counted & ~zeroed[None, :, None], dlp, 0.0)
        return dlp.astype(log_probs.dtype), None


def _extended_labels(targets: Any, target_lengths: Any, blank: int) -> Any:
    """(N, 2 S + 1): blank, l_1, blank, l_2, ..., blank (targets already (N, S) padded)."""
    batch, longest = targets.shape
    extended = np.full((batch, 2 * longest + 1), blank, dtype=np.int64)
    extended[:, 1::2] = targets
    return extended


def _lengths(name: str, value: Any, batch: int) -> Any:
    if isinstance(value, Tensor):
        value = value.numpy()
    lengths = np.asarray(value).astype(np.int64).reshape(-1)
    if lengths.shape != (batch,):
        raise RuntimeError(f"ctc_loss: {name} must have one entry per batch element ({batch}),"
                           f" got {lengths.shape[0]}")
    return lengths


def _padded_targets(targets: Any, target_lengths: Any, batch: int) -> Any:
    """(N, S) padded targets from the padded or the concatenated (1-D) form."""
    if targets.ndim == 2:
        if targets.shape[1] < target_lengths.max(initial=0):
            raise RuntimeError(f"ctc_loss: Expected tensor to have size at least "
                               f"{int(target_lengths.max())} at dimension 1, but got size "
                               f"{targets.shape[1]} for targets (the padded form)")
        inside = np.arange(targets.shape[1])[None, :] < target_lengths[:, None]
        return np.where(inside, targets, 0).astype(np.int64)       # padding is never read
    if targets.size < target_lengths.sum():
        raise RuntimeError(f"ctc_loss: the concatenated targets hold {targets.size} labels, "
                           f"fewer than the sum of target_lengths ({int(target_lengths.sum())})")
    padded = np.zeros((batch, max(int(target_lengths.max(initial=0)), 1)), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(target_lengths)[:-1]])
    for n, (start, length) in enumerate(zip(starts, target_lengths)):
        padded[n, :length] = targets[start:start + length]
    return padded


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """``F.ctc_loss``: -log p(target | log_probs) summed over every alignment; "mean" divides
    each sample's loss by its target length (at least 1), then averages over the batch."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    (log_probs,) = cast_args("ctc_loss", log_probs)     # autocast: float32, as torch's list
    if not is_floating(log_probs.dtype) or log_probs.dtype.itemsize < 4:
        raise RuntimeError(f"ctc_loss: not implemented for {log_probs.dtype}: torch's CPU "
                           f"kernel takes float and double (float32, float64); convert with "
                           f".float()")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape "
                           f"{tuple(log_probs.shape)}")
    steps, batch, classes = log_probs.shape
    target_array = np.asarray(targets.numpy() if isinstance(targets, Tensor) else targets)
    if unbatched and target_array.ndim == 1:
        target_array = target_array[None]
    inputs = _lengths("input_lengths", input_lengths, batch)
    lengths = _lengths("target_lengths", target_lengths, batch)
    if not 0 <= blank < classes:
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {classes}), got "
                           f"{blank}")
    if (inputs > steps).any() or (inputs < 0).any():
        raise RuntimeError(f"ctc_loss: Expected input_lengths to have value at most {steps}, "
                           f"but got value {int(inputs.max())} (and none negative)")
    if (lengths < 0).any():
        raise RuntimeError("ctc_loss: target_lengths must be non-negative")
    if target_array.ndim == 2:          # checked here, before any work
        _padded_targets(target_array, lengths, batch)
    if not isinstance(targets, Tensor) or (unbatched and targets.ndim == 1):
        targets = Tensor._wrap(target_array.astype(np.int64))
    nll = CTCLoss.apply(log_probs, targets, input_lengths=inputs,
                        target_lengths=lengths, blank=int(blank),
                        zero_infinity=bool(zero_infinity))                  # (N,)
    if reduction == "none":
        return nll.squeeze(0) if unbatched else nll
    if reduction == "sum":
        return nll.sum()
    divisor = Tensor._wrap(backend.to_device(np.maximum(lengths, 1).astype(log_probs.dtype),
                                             log_probs.device))
    return (nll / divisor).mean()
