"""Performer (FAVOR+) and linear attention: softmax attention through random features, in
memory and time linear in S (docs/long_sequences.md#performer-favor).

Shapes: q (..., S_q, d_k), k (..., S_k, d_k), v (..., S_k, d_v), W the (m, d_k) projection
of m random features. With x' = x * scale^(1/2) (so q' . k' = q . k * scale):

    phi(x') = exp(W x' - |x'|^2 / 2) / sqrt(m),   E[phi(q') . phi(k')] = exp(q' . k')

for rows of W drawn from N(0, I) (here orthogonal blocks, with chi-distributed norms, which
lowers the variance). Then softmax attention out_i = sum_j exp(q_i'.k_j') v_j / sum_j exp(..)
becomes out_i = phi(q_i) . (sum_j phi(k_j) v_j^T) / phi(q_i) . (sum_j phi(k_j)): one
(m, d_v) matrix instead of an (S_q, S_k) one. Causal: the sums run over j <= i (prefix
sums, computed chunk by chunk). ``feature_type="elu"``: phi(x) = elu(x) + 1 (linear
attention, Katharopoulos et al.), deterministic and not an approximation of softmax.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..autograd import Function
from ..tensor import Tensor
from .attention import default_scale

__all__ = ["performer_attention", "PerformerAttention", "orthogonal_random_features",
           "performer_features", "performer_weights"]

_FEATURE_TYPES = ("positive", "elu")
_CHUNK = 64      # rows per chunk of the causal prefix sums: (C, C) blocks + (S/C, m, d_v) states


def orthogonal_random_features(num_features: int, d_k: int, generator: Any = None,
                               device: str = "cpu", dtype: Any = np.float64) -> Any:
    """(m, d_k) rows for FAVOR+: blocks of d_k orthonormal rows (QR of a Gaussian matrix),
    each row then scaled by the norm of an independent N(0, I_d) vector, so every row is
    marginally N(0, I) but rows within a block are exactly orthogonal."""
    gen = generator if generator is not None else backend.default_generator("cpu")
    blocks = []
    for _ in range(-(-num_features // d_k)):
        gaussian = backend.to_host(gen.standard_normal((d_k, d_k)))     # QR on the host
        orthonormal, _ = np.linalg.qr(gaussian)       # columns orthonormal
        blocks.append(orthonormal.T)
    rows = np.concatenate(blocks, axis=0)[:num_features]            # (m, d_k)
    norms = np.linalg.norm(backend.to_host(gen.standard_normal((num_features, d_k))), axis=1)
    return backend.to_device((rows * norms[:, None]).astype(dtype), device)


def performer_features(x: Any, projection: Any, feature_type: str, root_scale: float,
                       is_query: bool) -> Any:
    """phi(x) (..., S, m) as an array. Positive features are shifted by a constant for
    stability (per row for queries, one per sequence for keys); out_i does not change, since
    the shift multiplies its numerator and denominator alike."""
    xp = backend.get_array_module(x)
    if feature_type == "elu":
        return xp.where(x > 0, x + 1, xp.exp(xp.minimum(x, 0)))     # elu(x) + 1
    xs = x * root_scale
    logits = xs @ projection.T - 0.5 * (xs * xs).sum(axis=-1, keepdims=True)   # (.., S, m)
    axes = (-1,) if is_query else (-2, -1)
    logits -= logits.max(axis=axes, keepdims=True) if logits.size else 0
    return xp.exp(logits) / math.sqrt(projection.shape[0])


def _feature_grad(d_phi: Any, phi: Any, x: Any, projection: Any, feature_type: str,
                  root_scale: float) -> Any:
    """dx from dphi. Positive: phi = exp(W x' - |x'|^2/2 - c)/sqrt(m), c held fixed, so with
    t = dphi * phi: dx' = t W - x' rowsum(t), dx = root_scale dx'. ELU: dphi * (1 or e^x)."""
    xp = backend.get_array_module(x)
    if feature_type == "elu":
        return d_phi * xp.where(x > 0, 1, phi)        # phi = e^x where x <= 0
    t = d_phi * phi                                   # (..., S, m)
    xs = x * root_scale
    return (t @ projection - xs * t.sum(axis=-1, keepdims=True)) * root_scale


class PerformerAttention(Function):
    """out = phi(q) (phi(k)^T v) / phi(q) (phi(k)^T 1), fixed features W.

    Non-causal, with Qf = phi(q), Kf = phi(k), KV = Kf^T v, z = Kf^T 1:
        num = Qf KV, den = Qf z, out = num / den
        dnum = g / den, dden = -rowsum(g * out) / den
        dQf = dnum KV^T + dden z^T, dKV = Qf^T dnum, dz = Qf^T dden
        dKf = v dKV^T + 1 dz^T,  dv = Kf dKV
    Causal, per chunk c of C rows, H_c and Z_c the sums over earlier chunks, A = tril(Q_c K_c^T):
        num = Q_c H_c + A v_c, den = Q_c Z_c + A 1; the same rule with dA = tril(dnum v_c^T +
        dden 1^T), and the earlier chunks get dH_c = Q_c^T dnum, dZ_c = Q_c^T dden through
        suffix sums G_c = sum_{c' > c} dH_c'.
    Then dq, dk through phi (``_feature_grad``).
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, q, k, v, projection: Any, causal: bool, feature_type: str,
                root_scale: float):
        q_feat = performer_features(q, projection, feature_type, root_scale, True)
        k_feat = performer_features(k, projection, feature_type, root_scale, False)
        if causal:
            out, saved = _causal_forward(q_feat, k_feat, v)
        else:
            out, saved = _full_forward(q_feat, k_feat, v)
        self.save_for_backward(q, k, q_feat, k_feat, v, out, saved, projection, causal,
                               feature_type, root_scale)
        return out

    def backward(self, grad):
        q, k, q_feat, k_feat, v, out, saved, projection, causal, kind, root = self.saved
        backward = _causal_backward if causal else _full_backward
        d_qf, d_kf, dv = backward(grad, q_feat, k_feat, v, out, saved)
        dq = _feature_grad(d_qf, q_feat, q, projection, kind, root)
        dk = _feature_grad(d_kf, k_feat, k, projection, kind, root)
        return dq, dk, dv


def _full_forward(q_feat: Any, k_feat: Any, v: Any) -> Tuple[Any, Tuple[Any, ...]]:
    xp = backend.get_array_module(v)
    kv = xp.swapaxes(k_feat, -1, -2) @ v           # (.., m, S_k) @ (.., S_k, d_v) -> (.., m, d_v)
    z = k_feat.sum(axis=-2)                         # (..., m)
    den = (q_feat * z[..., None, :]).sum(axis=-1)   # (..., S_q)
    out = (q_feat @ kv) / den[..., None]            # (.., S_q, m) @ (.., m, d_v)
    return out, (kv, z, den)


def _full_backward(grad, q_feat, k_feat, v, out, saved):
    xp = backend.get_array_module(grad)
    kv, z, den = saved
    d_num = grad / den[..., None]                                   # (..., S_q, d_v)
    d_den = -(grad * out).sum(axis=-1) / den                        # (..., S_q)
    d_qf = d_num @ xp.swapaxes(kv, -1, -2) + d_den[..., None] * z[..., None, :]
    d_kv = xp.swapaxes(q_feat, -1, -2) @ d_num                      # (.., m, S_q) @ (.., S_q, d_v)
    d_z = (q_feat * d_den[..., None]).sum(axis=-2)                  # (..., m)
    d_kf = v @ xp.swapaxes(d_kv, -1, -2) + d_z[..., None, :]        # (.., S_k, d_v) @ (.., d_v, m)
    dv = k_feat @ d_kv                                              # (.., S_k, m) @ (.., m, d_v)
    return d_qf, d_kf, dv


def _chunked(x: Any, chunk: int, num_chunks: int) -> Any:
    """(..., S, w) zero-padded to (..., nc, C, w)."""
    xp = backend.get_array_module(x)
    padded = xp.zeros(x.shape[:-2] + (num_chunks * chunk, x.shape[-1]), dtype=x.dtype)
    padded[..., :x.shape[-2], :] = x
    return padded.reshape(x.shape[:-2] + (num_chunks, chunk, x.shape[-1]))


def _exclusive_cumsum(x: Any, axis: int, reverse: bool = False) -> Any:
    """sum over the chunks strictly before (reverse: strictly after) each chunk."""
    xp = backend.get_array_module(x)
    out = xp.zeros_like(x)
    moved, target = xp.moveaxis(x, axis, 0), xp.moveaxis(out, axis, 0)   # views
    if reverse:
        target[:-1] = xp.cumsum(moved[::-1], axis=0)[::-1][1:]
    else:
        target[1:] = xp.cumsum(moved, axis=0)[:-1]
    return out


def _causal_forward(q_feat: Any, k_feat: Any, v: Any) -> Tuple[Any, Tuple[Any, ...]]:
    xp = backend.get_array_module(v)
    s = q_feat.shape[-2]
    chunk = min(_CHUNK, s)
    nc = -(-s // chunk)
    qc, kc, vc = (_chunked(a, chunk, nc) for a in (q_feat, k_feat, v))   # (.., nc, C, w)
    tril = xp.tri(chunk, dtype=bool)
    local = xp.where(tril, qc @ xp.swapaxes(kc, -1, -2), 0)    # A: (.., nc, C, m) @ (.., m, C)
    states = _exclusive_cumsum(xp.swapaxes(kc, -1, -2) @ vc, -3)    # H: (.., nc, m, d_v)
    key_sums = _exclusive_cumsum(kc.sum(axis=-2), -2)               # Z: (.., nc, m)
    num = qc @ states + local @ vc                  # (.., C, m) @ (.., m, d_v) + (.., C, C) @ ..
    den = (qc * key_sums[..., None, :]).sum(axis=-1) + local.sum(axis=-1)   # (.., nc, C)
    den_flat = den.reshape(den.shape[:-2] + (nc * chunk,))
    den_flat[..., s:] = 1                           # padding rows: 0 / 1, never 0 / 0
    out_chunks = num / den[..., None]
    out = out_chunks.reshape(v.shape[:-2] + (nc * chunk, v.shape[-1]))[..., :s, :]
    return out, (qc, kc, vc, local, states, key_sums, den, out_chunks, chunk, nc)


def _causal_backward(grad, q_feat, k_feat, v, out, saved):
    xp = backend.get_array_module(grad)
    qc, kc, vc, local, states, key_sums, den, out_chunks, chunk, nc = saved
    s = grad.shape[-2]
    g = _chunked(grad, chunk, nc)                                   # (..., nc, C, d_v)
    d_num = g / den[..., None]
    d_den = -(g * out_chunks).sum(axis=-1) / den                    # (..., nc, C)
    tril = xp.tri(chunk, dtype=bool)
    d_local = xp.where(tril, d_num @ xp.swapaxes(vc, -1, -2) + d_den[..., None], 0)  # dA
    d_qc = (d_num @ xp.swapaxes(states, -1, -2) + d_den[..., None] * key_sums[..., None, :]
            + d_local @ kc)                                         # (..., nc, C, m)
    d_states = xp.swapaxes(qc, -1, -2) @ d_num                      # dH: (.., nc, m, d_v)
    d_key_sums = (qc * d_den[..., None]).sum(axis=-2)               # dZ: (.., nc, m)
    later = _exclusive_cumsum(d_states, -3, reverse=True)           # G: (.., nc, m, d_v)
    later_sums = _exclusive_cumsum(d_key_sums, -2, reverse=True)    # (.., nc, m)
    d_kc = (xp.swapaxes(d_local, -1, -2) @ qc + vc @ xp.swapaxes(later, -1, -2)
            + later_sums[..., None, :])                             # (..., nc, C, m)
    d_vc = xp.swapaxes(local, -1, -2) @ d_num + kc @ later          # (..., nc, C, d_v)

    def unchunk(a: Any) -> Any:
        return a.reshape(a.shape[:-3] + (nc * chunk, a.shape[-1]))[..., :s, :]
    return unchunk(d_qc), unchunk(d_kc), unchunk(d_vc)


def _check(query: Tensor, key: Tensor, value: Tensor, num_features: Any, causal: bool,
           feature_type: str) -> None:
    op = "performer_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise ValueError(f"{op}: {name} must be (..., S, d), got shape {t.shape}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{op}: need q (..., S_q, d_k), k (..., S_k, d_k), v (..., S_k, d_v); "
                         f"got {query.shape}, {key.shape}, {value.shape}")
    if not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]):
        raise ValueError(f"{op}: the leading dims of q {query.shape}, k {key.shape} and v "
                         f"{value.shape} must be equal")
    if causal and query.shape[-2] != key.shape[-2]:
        raise ValueError(f"{op}: causal=True needs as many queries as keys, got S_q="
                         f"{query.shape[-2]} and S_k={key.shape[-2]}")
    if feature_type not in _FEATURE_TYPES:
        raise ValueError(f"{op}: feature_type must be one of {_FEATURE_TYPES}, got "
                         f"{feature_type!r}")
    if feature_type == "positive" and (isinstance(num_features, bool) or not isinstance(
            num_features, (int, np.integer)) or num_features < 1):
        raise ValueError(f"{op}: num_features must be a positive int (the number m of random "
                         f"features; 256 is a usual choice), got {num_features!r}")


def performer_attention(query: Tensor, key: Tensor, value: Tensor, num_features: int,
                        causal: bool = False, feature_type: str = "positive",
                        generator: Any = None, *, scale: Optional[float] = None,
                        projection: Any = None) -> Tensor:
    """Attention approximated with ``num_features`` positive orthogonal random features
    (FAVOR+), or linear attention with phi(x) = elu(x) + 1 (``feature_type="elu"``; then
    ``num_features`` and ``generator`` are unused). Approximates
    ``scaled_dot_product_attention(query, key, value, is_causal=causal, scale=scale)``.

    The features W (m, d_k) are drawn from ``generator`` (a NumPy Generator; default:
    tinyattn's, seeded by ``manual_seed``) at each call, or taken from ``projection``
    (an array or Tensor (m, d_k), as ``orthogonal_random_features`` makes) to keep them
    fixed. The gradient is for fixed features: W is a constant, not a parameter.
    """
    _check(query, key, value, num_features, causal, feature_type)
    scale = default_scale(query.shape[-1]) if scale is None else float(scale)
    if scale <= 0:
        raise ValueError(f"performer_attention: scale must be > 0, got {scale}")
    if feature_type == "elu":
        projection = None
    elif projection is not None:
        projection = projection._data if isinstance(projection, Tensor) else projection
        if tuple(projection.shape) != (num_features, query.shape[-1]):
            raise ValueError(f"performer_attention: projection must be (num_features, d_k) = "
                             f"{(num_features, query.shape[-1])}, got {tuple(projection.shape)}")
        projection = backend.to_device(projection, query.device).astype(query.dtype)
    else:
        projection = orthogonal_random_features(int(num_features), query.shape[-1], generator,
                                                query.device, query.dtype)
    return PerformerAttention.apply(query, key, value, projection=projection,
                                    causal=bool(causal), feature_type=feature_type,
                                    root_scale=math.sqrt(scale))


def performer_weights(query: Tensor, key: Tensor, projection: Any, causal: bool = False,
                      feature_type: str = "positive", scale: Optional[float] = None) -> Tensor:
    """The (..., S_q, S_k) weights the Performer applies implicitly (each row sums to 1),
    formed explicitly, without gradient: for looking at, on short sequences only."""
    xp = backend.get_array_module(query._data)
    scale = default_scale(query.shape[-1]) if scale is None else float(scale)
    proj = None if projection is None else (projection._data if isinstance(projection, Tensor)
                                            else projection).astype(query.dtype)
    root = math.sqrt(scale)
    qf = performer_features(query._data, proj, feature_type, root, True)
    kf = performer_features(key._data, proj, feature_type, root, False)
    weights = qf @ xp.swapaxes(kf, -1, -2)          # (.., S_q, m) @ (.., m, S_k)
    if causal:
        weights = xp.where(xp.tri(weights.shape[-2], weights.shape[-1], dtype=bool), weights, 0)
    return Tensor._wrap(weights / weights.sum(axis=-1, keepdims=True))
