"""Adapters: tinyattn's saved arrays in, a learner's exercise backward called, gradients out.

Each ``Swap`` says which ``Function`` subclass of tinyattn an exercise part can stand in for,
and how: its adapter reads ``fn.saved`` (the arrays the op's forward kept), builds the cache
the exercise's backward expects, calls the learner's function and returns what tinyattn's
own ``backward`` would (a tuple in the op's input order, ``None`` for inputs without a
gradient). When the op was used in a way the exercise does not cover (attention with
dropout, layer norm over several axes, tanh-GELU, ...) the adapter raises ``NotCovered`` and
tinyattn's own backward runs for that call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List

import numpy as np

from ..ops.attention import (PackedSelfAttention, ScaledDotProductAttention,
                             probabilities_from_logsumexp)
from ..ops.elementwise import _SLOPE_SAVED, Add, Gelu, Mul
from ..ops.embedding import Embedding
from ..ops.loss import CrossEntropy
from ..ops.masking import MaskedFill
from ..ops.matmul import Linear, Matmul
from ..ops.normal_cdf import normal_cdf_and_pdf
from ..ops.norm import LayerNorm
from ..ops.reduce import Mean, Sum
from ..ops.rope import Rope
from ..ops.softmax import LogSoftmax, Softmax

__all__ = ["Swap", "SWAPS", "NotCovered"]


class NotCovered(Exception):
    """This call of the op is outside what the exercise covers; use tinyattn's backward."""


@dataclass
class Swap:
    op: type                    # the tinyattn Function subclass
    exercise: str               # the exercise's name, e.g. "linear"
    part: str                   # the part whose NAME_backward is called
    adapter: Callable[[Any, Any, Callable], Any]   # (fn, grad, learner backward) -> grads


def _add(fn, grad, backward):
    a_shape, b_shape = fn.saved[:2]     # (and alpha, for complex operands: not in the exercise)
    return tuple(backward(grad, (a_shape, b_shape)))


def _mul(fn, grad, backward):
    """Mul keeps an input only if the OTHER needs a gradient (scaling by a constant keeps
    just the constant): the one not kept stands in as zeros of its shape, and the gradient
    computed from it (for the input that needs none) is dropped."""
    a, b = (x if isinstance(x, np.ndarray) else np.zeros(x.shape, dtype=grad.dtype)
            for x in fn.saved)
    da, db = backward(grad, (a, b))
    return (da if fn.needs_input_grad[0] else None, db if fn.needs_input_grad[1] else None)


def _reduction(fn, grad, backward):
    shape, axes, keepdim = fn.saved
    return backward(grad, (shape, tuple(axes), keepdim))


def _matmul(fn, grad, backward):
    """Matmul keeps an input only if the OTHER needs a gradient (as torch's mm): the one
    not kept stands in as zeros of its shape, and the gradient computed from it (for the
    input that needs none) is dropped, as in ``_mul``."""
    a_shape, b_shape = fn.saved[5:7]
    if len(a_shape) < 2 or len(b_shape) < 2:
        raise NotCovered("matmul with a 1-D operand")
    a, b = (x if x is not None else np.zeros(shape, dtype=grad.dtype)
            for x, shape in zip(fn.saved[:2], (a_shape, b_shape)))
    da, db = backward(grad, (a, b))
    return (da if fn.needs_input_grad[0] else None, db if fn.needs_input_grad[1] else None)


def _linear(fn, grad, backward):
    x, weight = fn.saved
    if x is None or weight is None:             # only one side needs a gradient: as torch,
        raise NotCovered("Linear with a frozen input or weight (it kept only one of them)")
    dx, dweight, dbias = backward(grad, (x, weight))
    return (dx, dweight, dbias) if len(fn.needs_input_grad) > 2 else (dx, dweight)


def _gelu(fn, grad, backward):
    x, approximate = fn.saved                   # the op recomputes Phi(x) as well
    if approximate == _SLOPE_SAVED:             # recorded before the swap: x is not kept
        raise NotCovered("float32 GELU recorded before the swap (it saved its slope, not x)")
    if approximate != "none":
        raise NotCovered("tanh-approximate GELU")
    return backward(grad, (x, normal_cdf_and_pdf(x)[0]))


def _rows(array: Any, axis: int) -> Any:
    return np.moveaxis(array, axis, -1)


def _softmax_like(fn, grad, backward):
    y, axis = fn.saved[:2]      # softmax: y; log_softmax: its output (and the half dtype)
    dx = backward(_rows(grad, axis), (_rows(y, axis),))
    return np.moveaxis(np.asarray(dx), -1, axis)


def _cross_entropy(fn, grad, backward):
    logp, target, valid, count, reduction, smoothing = fn.saved
    if reduction != "mean" or smoothing > 0:
        raise NotCovered(f"cross_entropy with reduction={reduction!r}, "
                         f"label_smoothing={smoothing}")
    dlogits = np.zeros_like(logp)
    if int(count) > 0:                          # rows whose target is ignore_index: 0
        dlogits[valid] = backward(grad, (logp[valid], target[valid]))
    return dlogits, None


def _keep_or_fill(fn, grad, backward):
    mask, x_shape, has_value = fn.saved         # tinyattn's mask: True = fill
    if has_value or tuple(x_shape) != tuple(grad.shape):
        raise NotCovered("masked_fill with a tensor value or an input smaller than the mask")
    return backward(grad, (np.logical_not(mask),))


def _layer_norm(fn, grad, backward):
    x, mu, rstd, weight, axes, has_bias = fn.saved
    xhat = (x - mu) * rstd                      # the op rebuilds it from x the same way
    if tuple(axes) != (xhat.ndim - 1,):
        raise NotCovered(f"layer norm over the axes {tuple(axes)}")
    w = weight if weight is not None else np.ones(xhat.shape[-1], dtype=xhat.dtype)
    dx, dweight, dbias = backward(grad, (xhat, rstd, w))
    return (dx,) + ((dweight,) if weight is not None else ()) + ((dbias,) if has_bias else ())


def _embedding(fn, grad, backward):
    ids, shape, padding_idx, scale_grad_by_freq = fn.saved     # the op's saved fields
    if padding_idx is not None:
        raise NotCovered("embedding with a padding_idx")
    if scale_grad_by_freq:
        raise NotCovered("embedding with scale_grad_by_freq=True")
    return backward(grad, (ids, shape))


def _attention_call(saved, q, grad, backward):
    _q, k, v, probs, _attn, keep, _out, scale, lse, mask, bias = saved
    if probs is None:                           # the op recomputes P from lse too
        probs = probabilities_from_logsumexp(q, k, scale, mask, bias, lse)
    if keep is not None:
        raise NotCovered("attention with dropout")
    if not q.shape[:-2] == k.shape[:-2] == v.shape[:-2]:
        raise NotCovered("attention whose q, k, v batch dims broadcast")
    return tuple(backward(grad, (q, k, v, probs, scale)))


def _attention(fn, grad, backward):
    return _attention_call(fn.saved, fn.saved[0], grad, backward)


def _packed_attention(fn, grad, backward):
    *saved, qkv = fn.saved
    dq, dk, dv = _attention_call(saved, qkv[0], grad, backward)
    return np.stack([dq, dk, dv])               # (3, ..., S, d_k), laid out like qkv


def _rope(fn, grad, backward):
    cos, sin = fn.saved
    return backward(grad, (cos, sin))


SWAPS: List[Swap] = [
    Swap(Add, "broadcast", "add", _add),
    Swap(Mul, "broadcast", "mul", _mul),
    Swap(Sum, "reductions", "sum", _reduction),
    Swap(Mean, "reductions", "mean", _reduction),
    Swap(Matmul, "matmul", "matmul", _matmul),
    Swap(Linear, "linear", "linear", _linear),
    Swap(Gelu, "gelu", "gelu", _gelu),
    Swap(Softmax, "softmax", "softmax", _softmax_like),
    Swap(LogSoftmax, "log_softmax_nll", "log_softmax", _softmax_like),
    Swap(CrossEntropy, "log_softmax_nll", "cross_entropy", _cross_entropy),
    Swap(MaskedFill, "masked_softmax", "keep_or_fill", _keep_or_fill),
    Swap(LayerNorm, "layer_norm", "layer_norm", _layer_norm),
    Swap(Embedding, "embedding", "embedding", _embedding),
    Swap(ScaledDotProductAttention, "attention", "attention", _attention),
    Swap(PackedSelfAttention, "attention", "attention", _packed_attention),
    Swap(Rope, "rope", "rope", _rope),
]
