"""The op table: one row per differentiable op, driving the tests and ``python -m tinyattn
gradcheck``.

A row names the op, the function under test (tensors in, tensor out), a NumPy/SciPy reference
for its forward (arrays in, array out), and a maker of input cases over several shapes
(broadcasting, masks, repeated indices). Floating inputs of a case are float64 and require a
gradient; integer and boolean inputs (ids, targets, masks) are passed through without one.
Adding an op means adding a row here: it is then checked like every other.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Sequence, Tuple

import numpy as np
import scipy.special

from . import functional as F
from . import ops
from .ops.attention import packed_self_attention
from .optable_extra import EXTRA_ROWS
from .optable_more import MORE_ROWS
from .optable_names import NAMES_ROWS
from .optable_round3 import ROUND3_ROWS
from .optable_attention_variants import ATTENTION_VARIANT_ROWS
from .optable_view_writes import VIEW_WRITE_ROWS
from .tensor import Tensor, as_tensor, tensor
from .precision import is_floating

__all__ = ["OpCase", "OpSpec", "OP_TABLE", "make_inputs"]


@dataclass(frozen=True)
class OpCase:
    label: str                      # the shapes, as the table prints them
    arrays: Tuple[np.ndarray, ...]  # float64 arrays require grad; ints and bools do not


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: Callable[..., Tensor]
    reference: Callable[..., np.ndarray]
    cases: Callable[[np.random.Generator], List[OpCase]]
    section: str                    # "anchor" in docs/derivations.md, or "file.md#anchor"


def make_inputs(case: OpCase, dtype: Any = np.float64, device: str = "cpu") -> List[Tensor]:
    """Tensors for a case: floating arrays (cast to ``dtype``) require grad, others do not."""
    tensors = []
    for a in case.arrays:
        if is_floating(a.dtype):
            tensors.append(tensor(a.astype(dtype), requires_grad=True, device=device))
        else:
            tensors.append(as_tensor(a, device=device))
    return tensors


def _pairs_to_cases(make: Callable[[np.random.Generator], List[Tuple[str, Tuple[np.ndarray, ...]]]]
                    ) -> Callable[[np.random.Generator], List[OpCase]]:
    """A case maker that returns (label, arrays) pairs, as one that returns OpCases."""
    return lambda rng: [OpCase(label, arrays) for label, arrays in make(rng)]


def _case(label: str, *arrays: np.ndarray) -> OpCase:
    return OpCase(label, tuple(arrays))


def _shapes(*shapes: Sequence[int]) -> str:
    return " ".join(str(tuple(s)) for s in shapes)


def _binary_cases(positive_b: bool = False) -> Callable[[np.random.Generator], List[OpCase]]:
    def make(rng: np.random.Generator) -> List[OpCase]:
        pairs = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((5,), ())]
        out = []
        for sa, sb in pairs:
            b = rng.standard_normal(sb)
            if positive_b:
                b = np.abs(b) + 0.5
            out.append(_case(_shapes(sa, sb), rng.standard_normal(sa), np.asarray(b)))
        return out
    return make


def _unary_cases(low: float = None, shapes=((3, 4), (2, 3, 5))):  # type: ignore[assignment]
    def make(rng: np.random.Generator) -> List[OpCase]:
        out = []
        for s in shapes:
            x = rng.standard_normal(s)
            if low is not None:
                x = np.abs(x) + low
            out.append(_case(_shapes(s), x))
        return out
    return make


def _pow_tensor_cases(rng: np.random.Generator) -> List[OpCase]:
    """Positive bases (x^p is smooth in p only there); float exponents get a gradient too,
    integer ones (the polynomial tutorials' (x, x^2, x^3)) do not."""
    return [_case("(3, 4) (3, 4)", np.abs(rng.standard_normal((3, 4))) + 0.3,
                  rng.standard_normal((3, 4))),
            _case("(5, 1) (3,)", np.abs(rng.standard_normal((5, 1))) + 0.3,
                  rng.standard_normal(3)),
            _case("(5, 1) int (3,)", rng.standard_normal((5, 1)), np.array([1, 2, 3]))]


def _away_from_zero(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Normal samples pushed away from 0, where relu's kink would fool finite differences."""
    x = rng.standard_normal(shape)
    return x + np.sign(x) * 0.1


def _softmax_ref(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return scipy.special.softmax(x, axis=axis)


def _gelu_ref(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + scipy.special.erf(x / np.sqrt(2)))


def _layer_norm_ref(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _rms_norm_ref(x, w=1.0, eps=1e-6, dims=1):
    axes = tuple(range(x.ndim - dims, x.ndim))
    return x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps) * w


def _rms_norm_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case(_shapes((2, 3, 5), (5,)), rng.standard_normal((2, 3, 5)),
                  1 + 0.1 * rng.standard_normal(5)),
            _case(_shapes((4, 6), (6,)) + " mean far from 0", 3 + 2 * rng.standard_normal((4, 6)),
                  rng.standard_normal(6))]


def _cross_entropy_ref(logits, target, ignore_index=-100, label_smoothing=0.0):
    logp = scipy.special.log_softmax(logits, axis=1)
    valid = target != ignore_index
    safe = np.where(valid, target, 0)
    nll = -logp[np.arange(len(target)), safe]
    smooth = -logp.mean(axis=1)
    per_row = ((1 - label_smoothing) * nll + label_smoothing * smooth) * valid
    return np.asarray(per_row.sum() / max(valid.sum(), 1))


def _attention_ref(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = scores.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    e = np.exp(scores - m)
    total = e.sum(-1, keepdims=True)
    p = e / np.where(total == 0, 1, total)
    return p @ v


def _attention_cases(rng: np.random.Generator) -> List[OpCase]:
    q, k, v = (rng.standard_normal((2, 2, 3, 4)), rng.standard_normal((2, 2, 5, 4)),
               rng.standard_normal((2, 2, 5, 3)))
    padding = np.ones((2, 1, 1, 5), dtype=bool)
    padding[1, :, :, 3:] = False
    fully_masked = np.ones((3, 5), dtype=bool)
    fully_masked[1] = False                      # query 1 may attend to nothing
    return [
        _case(_shapes(q.shape, k.shape, v.shape), q, k, v),
        _case(_shapes(q.shape, k.shape, v.shape) + " padding mask (2,1,1,5)", q, k, v, padding),
        _case(_shapes(q.shape, k.shape, v.shape) + " fully masked row", q, k, v, fully_masked),
    ]


def _getitem_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case("(4, 5)[1:3, ::2]", rng.standard_normal((4, 5))),
            _case("(4, 5)[[0, 2, 0, 0]] repeated rows", rng.standard_normal((4, 5)))]


def _ce_cases(rng: np.random.Generator) -> List[OpCase]:
    target = np.array([1, 0, 3, 3, 2])
    ignored = np.array([1, -100, 3, -100, 2])
    return [_case("(5, 4) target (5,)", rng.standard_normal((5, 4)), target),
            _case("(5, 4) with ignore_index", rng.standard_normal((5, 4)), ignored)]


def _index_op(x: Tensor) -> Tensor:
    """Slicing for the first case, integer-array indexing with repeats for the second (the
    two cases share a shape, so the case's label is not visible here: both run)."""
    return ops.cat([x[1:3, ::2].reshape(-1), x[[0, 2, 0, 0]].reshape(-1)])


def _index_ref(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x[1:3, ::2].reshape(-1), x[[0, 2, 0, 0]].reshape(-1)])


def _masked_fill_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case("(3, 4) mask (3, 4)", rng.standard_normal((3, 4)),
                  rng.random((3, 4)) > 0.5),
            _case("(2, 3, 4) mask (3, 1) broadcast", rng.standard_normal((2, 3, 4)),
                  rng.random((3, 1)) > 0.5)]


def _where_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case("cond (3, 4), (3, 4), (4,)", rng.random((3, 4)) > 0.5,
                  rng.standard_normal((3, 4)), rng.standard_normal(4))]


def _embedding_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case("weight (6, 3) ids (2, 4) repeated", rng.standard_normal((6, 3)),
                  np.array([[1, 1, 5, 0], [1, 2, 5, 1]]))]


def _matmul_cases(rng: np.random.Generator) -> List[OpCase]:
    shapes = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (4, 3)),
              ((2, 3, 4), (4,))]
    return [_case(_shapes(a, b), rng.standard_normal(a), rng.standard_normal(b))
            for a, b in shapes]


def _linear_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case(_shapes((2, 3, 4), (5, 4), (5,)), rng.standard_normal((2, 3, 4)),
                  rng.standard_normal((5, 4)), rng.standard_normal(5)),
            _case(_shapes((4,), (2, 4), (2,)), rng.standard_normal(4),
                  rng.standard_normal((2, 4)), rng.standard_normal(2))]


def _layer_norm_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case(_shapes((2, 3, 5), (5,), (5,)), rng.standard_normal((2, 3, 5)),
                  1 + 0.1 * rng.standard_normal(5), rng.standard_normal(5)),
            _case(_shapes((4, 6), (6,), (6,)), 3 + 2 * rng.standard_normal((4, 6)),
                  rng.standard_normal(6), rng.standard_normal(6))]


def _max_cases(rng: np.random.Generator) -> List[OpCase]:
    # Distinct values: at a tie the max is not differentiable and finite differences disagree
    # with any subgradient, so ties are tested separately (tests/test_edge_cases.py).
    return [_case("(3, 4) dim=1", rng.permutation(12).reshape(3, 4) / 3.0),
            _case("(2, 3, 4) dim=1", rng.permutation(24).reshape(2, 3, 4) / 5.0)]


def _concat_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case(_shapes((2, 3), (2, 1), (2, 2)), rng.standard_normal((2, 3)),
                  rng.standard_normal((2, 1)), rng.standard_normal((2, 2)))]


def _stack_cases(rng: np.random.Generator) -> List[OpCase]:
    return [_case(_shapes((2, 3), (2, 3)), rng.standard_normal((2, 3)),
                  rng.standard_normal((2, 3)))]


def _split_fn(x: Tensor) -> Tensor:
    a, b, c = ops.split(x, [1, 3, 1], dim=1)
    return ops.cat([c * 2.0, a, b * b], dim=1)


def _split_ref(x: np.ndarray) -> np.ndarray:
    a, b, c = x[:, :1], x[:, 1:4], x[:, 4:]
    return np.concatenate([c * 2.0, a, b * b], axis=1)


def _rope_ref(x: np.ndarray, offset: int = 3, base: float = 10000.0) -> np.ndarray:
    """Pairs (x[2i], x[2i+1]) at position p rotated by p * base^(-2i/d), as a 2x2 matrix."""
    seq_len, dim = x.shape[-2], x.shape[-1]
    angles = np.arange(offset, offset + seq_len)[:, None] * base ** (-np.arange(0, dim, 2) / dim)
    cos, sin = np.cos(angles), np.sin(angles)                      # (S, d/2)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def _device_round_trip(x: Tensor) -> Tensor:
    """Convert there and back: x moved to the strict stand-in device (or, when x is already
    on a device, to the CPU), scaled there, and moved home; the gradient takes the same trip."""
    from . import strict_device  # noqa: PLC0415 - a stand-in device, registered on demand
    strict_device.enable()
    away = "strict" if x.device == "cpu" else "cpu"
    return ops.convert(ops.convert(x, device=away) * 3.0, device=x.device)


def _setitem_index(x: Any) -> Any:
    return (slice(None), [0, 2]) if x.ndim == 2 else (0, slice(None), [1, 3])


def _setitem_op(x: Tensor, v: Tensor) -> Tensor:
    """Item assignment while recording (the SetItem op, ops/inplace.py), then a product so
    that the replaced elements and x both reach the output."""
    out = x * 1.0
    out[_setitem_index(x)] = v
    return out * x


def _setitem_ref(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    out = x.copy()
    if x.ndim == 2:
        out[:, [0, 2]] = v
    else:
        out[0][:, [1, 3]] = v        # PyTorch's layout: the int first, then the list
    return out * x


OP_TABLE: List[OpSpec] = [
    OpSpec("add", ops.add, np.add, _binary_cases(), "broadcasting"),
    OpSpec("sub", ops.sub, np.subtract, _binary_cases(), "broadcasting"),
    OpSpec("mul", ops.mul, np.multiply, _binary_cases(), "broadcasting"),
    OpSpec("div", ops.div, np.divide, _binary_cases(positive_b=True), "broadcasting"),
    OpSpec("neg", ops.neg, np.negative, _unary_cases(), "elementwise"),
    OpSpec("pow", lambda x: ops.pow(x, 2.5), lambda x: x ** 2.5, _unary_cases(low=0.3),
           "elementwise"),
    OpSpec("pow_tensor", ops.pow, np.power, _pow_tensor_cases,
           "powers-with-a-tensor-exponent"),
    OpSpec("exp", ops.exp, np.exp, _unary_cases(), "elementwise"),
    OpSpec("log", ops.log, np.log, _unary_cases(low=0.2), "elementwise"),
    OpSpec("sqrt", ops.sqrt, np.sqrt, _unary_cases(low=0.2), "elementwise"),
    OpSpec("tanh", ops.tanh, np.tanh, _unary_cases(), "elementwise"),
    OpSpec("sin", ops.sin, np.sin, _unary_cases(), "sin-and-cos"),
    OpSpec("cos", ops.cos, np.cos, _unary_cases(), "sin-and-cos"),
    OpSpec("relu", ops.relu, lambda x: np.maximum(x, 0),
           lambda rng: [_case("(3, 4)", _away_from_zero(rng, (3, 4)))], "elementwise"),
    OpSpec("gelu", F.gelu, lambda x: _gelu_ref(x, "none"), _unary_cases(), "gelu"),
    OpSpec("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
           lambda x: _gelu_ref(x, "tanh"), _unary_cases(), "gelu"),
    OpSpec("convert", _device_round_trip, lambda x: x * 3.0, _unary_cases(), "convert"),
    OpSpec("sum", lambda x: ops.sum(x, dim=1), lambda x: x.sum(axis=1), _unary_cases(),
           "reductions"),
    OpSpec("sum_all", lambda x: ops.sum(x), lambda x: np.asarray(x.sum()), _unary_cases(),
           "reductions"),
    OpSpec("mean", lambda x: ops.mean(x, dim=(0, -1), keepdim=True),
           lambda x: x.mean(axis=(0, -1), keepdims=True), _unary_cases(), "reductions"),
    OpSpec("amax", lambda x: ops.amax(x, dim=1), lambda x: x.max(axis=1), _max_cases,
           "reductions"),
    OpSpec("reshape", lambda x: ops.reshape(x, -1, 2), lambda x: x.reshape(-1, 2),
           _unary_cases(shapes=((3, 4), (2, 3, 2))), "shape-ops"),
    OpSpec("permute", lambda x: ops.permute(x, 2, 0, 1), lambda x: x.transpose(2, 0, 1),
           _unary_cases(shapes=((2, 3, 4),)), "shape-ops"),
    OpSpec("transpose", lambda x: ops.transpose(x, 0, 1), lambda x: x.swapaxes(0, 1),
           _unary_cases(), "shape-ops"),
    OpSpec("getitem", _index_op, _index_ref, _getitem_cases, "shape-ops"),
    OpSpec("repeat_interleave", lambda x: ops.repeat_interleave(x, 3, dim=1),
           lambda x: np.repeat(x, 3, axis=1), _unary_cases(shapes=((3, 4), (2, 3, 2))),
           "repeat_interleave"),
    OpSpec("repeat_interleave_flat", lambda x: ops.repeat_interleave(x, 2),
           lambda x: np.repeat(x.reshape(-1), 2), _unary_cases(shapes=((2, 3),)),
           "repeat_interleave"),
    OpSpec("cat", lambda *xs: ops.cat(list(xs), dim=1),
           lambda *xs: np.concatenate(xs, axis=1), _concat_cases, "shape-ops"),
    OpSpec("stack", lambda *xs: ops.stack(list(xs), dim=1),
           lambda *xs: np.stack(xs, axis=1), _stack_cases, "shape-ops"),
    OpSpec("split", _split_fn, _split_ref,
           lambda rng: [_case("(2, 5) into [1, 3, 1]", rng.standard_normal((2, 5)))],
           "shape-ops"),
    OpSpec("matmul", ops.matmul, np.matmul, _matmul_cases, "matmul"),
    OpSpec("linear", F.linear, lambda x, w, b: x @ w.T + b, _linear_cases, "linear"),
    OpSpec("softmax", F.softmax, _softmax_ref,
           _unary_cases(shapes=((3, 4), (2, 3, 5))), "softmax"),
    OpSpec("softmax_dim0", lambda x: F.softmax(x, dim=0), lambda x: _softmax_ref(x, 0),
           _unary_cases(shapes=((3, 4),)), "softmax"),
    OpSpec("log_softmax", F.log_softmax, lambda x: scipy.special.log_softmax(x, axis=-1),
           _unary_cases(), "log-softmax"),
    OpSpec("masked_fill", lambda x, m: F.masked_fill(x, m, -2.0),
           lambda x, m: np.where(m, -2.0, x), _masked_fill_cases, "masking"),
    OpSpec("where", F.where, np.where, _where_cases, "masking"),
    OpSpec("dropout", lambda x: F.dropout(x, 0.3, generator=np.random.default_rng(0)),
           lambda x: x * (np.random.default_rng(0).random(x.shape) >= 0.3) / 0.7,
           _unary_cases(), "dropout"),
    OpSpec("layer_norm", lambda x, w, b: F.layer_norm(x, x.shape[-1], w, b),
           _layer_norm_ref, _layer_norm_cases, "layer-norm"),
    OpSpec("layer_norm_no_affine", lambda x: F.layer_norm(x, x.shape[-1]),
           lambda x: _layer_norm_ref(x, 1.0, 0.0),
           lambda rng: [_case("(2, 3, 5)", rng.standard_normal((2, 3, 5)))], "layer-norm"),
    OpSpec("rms_norm", lambda x, w: F.rms_norm(x, x.shape[-1], w, eps=1e-6), _rms_norm_ref,
           _rms_norm_cases, "rms-norm"),
    OpSpec("rms_norm_2d_no_affine", lambda x: F.rms_norm(x, x.shape[-2:], eps=1e-6),
           lambda x: _rms_norm_ref(x, dims=2),
           lambda rng: [_case("(2, 3, 5) over (3, 5)", rng.standard_normal((2, 3, 5)))],
           "rms-norm"),
    OpSpec("embedding", lambda w, ids: F.embedding(ids, w), lambda w, ids: w[ids],
           _embedding_cases, "embedding"),
    OpSpec("cross_entropy", F.cross_entropy, _cross_entropy_ref, _ce_cases, "cross-entropy"),
    OpSpec("cross_entropy_smooth", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1),
           lambda x, t: _cross_entropy_ref(x, t, label_smoothing=0.1), _ce_cases,
           "cross-entropy"),
    OpSpec("attention", lambda q, k, v, m=None: F.scaled_dot_product_attention(q, k, v, m),
           _attention_ref, _attention_cases, "attention"),
    OpSpec("attention_broadcast",   # one set of keys/values shared by every batch row and head
           lambda q, k, v: F.scaled_dot_product_attention(q, k, v), _attention_ref,
           lambda rng: [_case("q (2, 3, 4, 5) k, v (1, 1, 6, 5)",
                              rng.standard_normal((2, 3, 4, 5)),
                              rng.standard_normal((1, 1, 6, 5)),
                              rng.standard_normal((1, 1, 6, 5)))], "attention"),
    OpSpec("attention_packed",      # MultiHeadAttention's self-attention: q, k, v stacked
           lambda qkv: packed_self_attention(qkv, is_causal=True),
           lambda qkv: _attention_ref(qkv[0], qkv[1], qkv[2],
                                      np.tri(qkv.shape[-2], qkv.shape[-2], dtype=bool)),
           lambda rng: [_case("qkv (3, 2, 2, 4, 5) causal",
                              rng.standard_normal((3, 2, 2, 4, 5)))], "attention"),
    OpSpec("attention_causal",
           lambda q, k, v, m=None: F.scaled_dot_product_attention(q, k, v, m, is_causal=True),
           lambda q, k, v, m=None: _attention_ref(
               q, k, v, np.tri(q.shape[-2], k.shape[-2], dtype=bool) if m is None
               else m & np.tri(q.shape[-2], k.shape[-2], dtype=bool)),
           _attention_cases, "attention"),
    # impl="tiled" (docs/tiled_attention.md): block_size=2 splits the cases into several tiles.
    OpSpec("attention_tiled",
           lambda q, k, v, m=None: F.scaled_dot_product_attention(q, k, v, m, impl="tiled",
                                                                  block_size=2),
           _attention_ref, _attention_cases, "tiled_attention.md#4-backward-step-by-step"),
    OpSpec("attention_tiled_causal",
           lambda q, k, v, m=None: F.scaled_dot_product_attention(
               q, k, v, m, is_causal=True, impl="tiled", block_size=2),
           lambda q, k, v, m=None: _attention_ref(
               q, k, v, np.tri(q.shape[-2], k.shape[-2], dtype=bool) if m is None
               else m & np.tri(q.shape[-2], k.shape[-2], dtype=bool)),
           _attention_cases, "tiled_attention.md#4-backward-step-by-step"),
    OpSpec("rope", lambda x: F.rope(x, offset=3), _rope_ref,
           _unary_cases(shapes=((2, 5, 4), (1, 2, 3, 6))), "nn.md#rope"),
    OpSpec("setitem", _setitem_op, _setitem_ref,
           lambda rng: [_case("x (3, 4) [:, [0, 2]] = v (3, 1)", rng.standard_normal((3, 4)),
                              rng.standard_normal((3, 1))),
                        _case("x (2, 3, 4) [0, :, [1, 3]] = v (3, 2)",
                              rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 2)))],
           "in-place-ops-and-version-counters"),
]

# The ops added for op coverage (issue 12), kept in their own module for length.
OP_TABLE += [OpSpec(name, fn, reference, _pairs_to_cases(make), section)
             for name, fn, reference, make, section in MORE_ROWS + EXTRA_ROWS + ROUND3_ROWS
             + ATTENTION_VARIANT_ROWS + NAMES_ROWS]
OP_TABLE += [OpSpec(name, fn, reference, _pairs_to_cases(make), section)
             for name, fn, reference, make, section in VIEW_WRITE_ROWS]
