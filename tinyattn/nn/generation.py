"""Text generation for ``GPT``: greedy, temperature, top-k and top-p (nucleus) sampling with a
KV cache (docs/nn.md#kv-cache).

Shapes: B batch, S sequence, V vocabulary.

Each step turns the last position's logits (B, V) into one token per row:

    temperature == 0                 -> argmax (greedy)
    z = (logits - max) / temperature    the largest entry is 0, so a tiny temperature sends the
                                        others to -inf instead of overflowing to +inf - +inf
    top_k:  keep exactly k entries (ties at the k-th value: the lowest token ids first)
    top_p:  keep the most likely tokens while the probability before them is < top_p
    sample from softmax(z) over what is kept (inverse CDF with a uniform draw per row)

The order (temperature, then top-k, then top-p) is Hugging Face's. Every draw comes from
``generator`` (a ``numpy.random.Generator``) or the device's default generator, so
``tinyattn.manual_seed(s)`` makes a generation reproducible, with or without the cache.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, List, Optional

import numpy as np

from .. import backend
from ..autograd import no_grad
from ..tensor import Tensor, as_tensor
from .attention import KVCache

if TYPE_CHECKING:
    from .gpt import GPT

__all__ = ["generate", "sample_next", "filtered_logits", "check_sampling_options",
           "NonFiniteLogitsError"]


class NonFiniteLogitsError(FloatingPointError, ValueError, RuntimeError):
    """The logits of a generation step hold NaN or inf. A ``FloatingPointError``, as
    ``tinyattn.detect_anomaly`` raises, and also a ``RuntimeError`` (what
    ``torch.multinomial`` raises on NaN probabilities) and a ``ValueError``, so that
    ``except`` clauses written for either catch it."""


def check_sampling_options(max_new_tokens: Any, temperature: Any, top_k: Any,
                           top_p: Any) -> None:
    """Refuse options that would give a meaningless token instead of a clear error."""
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, numbers.Integral) \
            or max_new_tokens < 0:
        raise ValueError(f"generate: max_new_tokens must be a whole number >= 0, got "
                         f"{max_new_tokens!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real) \
            or not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"generate: temperature must be a finite number >= 0 (0 = greedy, 1 = "
                         f"the model's distribution), got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral)
                              or top_k < 1):
        raise ValueError(f"generate: top_k must be a whole number >= 1 (or None), got "
                         f"{top_k!r}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, numbers.Real)
                              or not 0.0 < top_p <= 1.0):
        raise ValueError(f"generate: top_p must be a probability in (0, 1] (or None), got "
                         f"{top_p!r}; 0.9 keeps the tokens that make up 90% of the mass")


def generate(model: "GPT", idx: Any, max_new_tokens: int, temperature: float = 1.0,
             top_k: Optional[int] = None, top_p: Optional[float] = None,
             use_cache: bool = True, generator: Any = None) -> Tensor:
    """``GPT.generate``: append ``max_new_tokens`` tokens to idx (B, S) -> (B, S + new)."""
    check_sampling_options(max_new_tokens, temperature, top_k, top_p)
    max_new_tokens = int(max_new_tokens)         # a NumPy integer sizes the cache as an int
    ids = _prompt_ids(idx)
    xp = backend.get_array_module(ids)
    block = model.config.block_size
    finite_flags: List[Any] = []       # one device bool per step, checked once at the end
    was_training = model.training
    # The long-sequence variants keep no key/value cache: every step reruns the context.
    use_cache = use_cache and model.config.attn_impl in ("plain", "tiled")
    model.eval()
    try:
        # NaN or inf logits raise after the loop (naming the step), not as NumPy warnings.
        with no_grad(), np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            caches: Optional[List[KVCache]] = None
            capacity = min(block, ids.shape[1] + max_new_tokens)
            for _ in range(max_new_tokens):
                if not use_cache:
                    last = _last_logits(model, ids[:, -block:], None)
                elif caches is None or caches[0].length + 1 > block:
                    # First step, or the context is full: (re)build the caches from the last
                    # block_size tokens, exactly what the uncached path computes.
                    caches = [KVCache(capacity) for _ in model.blocks]
                    last = _last_logits(model, ids[:, -block:], caches)
                else:
                    last = _last_logits(model, ids[:, -1:], caches)
                finite_flags.append(xp.isfinite(last).all())
                nxt = sample_next(last, temperature, top_k, top_p, generator)
                ids = xp.concatenate([ids, nxt[:, None].astype(ids.dtype)], axis=1)
    finally:
        model.train(was_training)
    _check_finite(finite_flags, ids.shape[1] - max_new_tokens)
    return Tensor._wrap(ids)


def _last_logits(model: "GPT", ids: Any, caches: Optional[List[KVCache]]) -> Any:
    """The logits (B, V) after the last of ids (B, S); ln_f and lm_head run on that one
    position only (the (D, V) product is the largest of a step)."""
    hidden, _ = model.trunk(Tensor._wrap(ids), caches)       # (B, S, D)
    last = model.ln_f(hidden[:, -1:])                        # (B, 1, D)
    return model.lm_head(last)._data[:, 0]                   # (B, 1, V) -> (B, V)


def sample_next(logits: Any, temperature: float, top_k: Optional[int] = None,
                top_p: Optional[float] = None, generator: Any = None) -> Any:
    """One token id per row of logits (B, V), drawn on the logits' device; float16 and
    bfloat16 logits are sampled in float32 (as torch.multinomial does): a float16 running
    sum stops growing at 2048, so no id above it could be drawn."""
    logits = _at_least_float32(logits)
    z = filtered_logits(logits, temperature, top_k, top_p)
    if z is None:
        return logits.argmax(axis=-1)                        # greedy
    xp = backend.get_array_module(z)
    probs = xp.exp(z)                                        # unnormalised, (B, V)
    cdf = xp.cumsum(probs, axis=-1)
    u = backend.uniform((z.shape[0], 1), backend.device_of(z), z.dtype, generator)
    picks = (cdf <= u * cdf[:, -1:]).sum(axis=-1)            # first index with cdf > u
    return xp.minimum(picks, z.shape[-1] - 1)


def filtered_logits(logits: Any, temperature: float, top_k: Optional[int] = None,
                    top_p: Optional[float] = None) -> Any:
    """(logits - max) / temperature (B, V), with -inf on every token top-k and top-p drop;
    None when the choice is greedy (temperature 0, or 1 / temperature overflows the dtype:
    the limit of softmax(z / t) as t -> 0 puts all the mass on the largest logit).
    Computed in float32 at least (a float16 cumulative mass stops growing)."""
    logits = _at_least_float32(logits)
    scale = 1.0 / temperature if temperature > 0 else math.inf
    if scale > float(np.finfo(logits.dtype).max):
        return None
    xp = backend.get_array_module(logits)
    z = (logits - logits.max(axis=-1, keepdims=True)) * logits.dtype.type(scale)  # <= 0
    vocab = z.shape[-1]
    if top_k is not None and top_k < vocab:
        kth = xp.partition(z, vocab - top_k, axis=-1)[:, vocab - top_k:vocab - top_k + 1]
        z = xp.where(_keep_largest(z, kth, top_k), z, -xp.inf)
    if top_p is not None and top_p < 1.0:
        ranked = -xp.sort(-z, axis=-1)                       # (B, V) largest first
        probs = xp.exp(ranked)
        probs /= probs.sum(axis=-1, keepdims=True)
        mass_before = xp.cumsum(probs, axis=-1) - probs      # the first token's is 0
        count = (mass_before < top_p).sum(axis=-1, keepdims=True)          # (B, 1), >= 1
        kth = xp.take_along_axis(ranked, count - 1, axis=-1)               # (B, 1)
        z = xp.where(_keep_largest(z, kth, count), z, -xp.inf)
    return z


def _at_least_float32(logits: Any) -> Any:
    return logits.astype(np.float32) if logits.dtype.itemsize < 4 else logits


def _keep_largest(z: Any, kth: Any, count: Any) -> Any:
    """(B, V) bool: exactly ``count`` entries per row, those above ``kth`` (the count-th
    largest value, (B, 1)) and, among the entries equal to it, the lowest token ids; like
    torch.topk, which also returns exactly k (Hugging Face's top-k keeps every tie)."""
    xp = backend.get_array_module(z)
    greater = z > kth
    room = count - greater.sum(axis=-1, keepdims=True)      # (B, 1) ties that still fit
    tied = z == kth
    return greater | (tied & (xp.cumsum(tied, axis=-1) <= room))


def _prompt_ids(idx: Any) -> Any:
    ids = (idx if isinstance(idx, Tensor) else as_tensor(np.asarray(idx)))._data
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"generate: idx must hold integer token ids, got dtype {ids.dtype}")
    if ids.ndim != 2 or ids.shape[0] < 1 or ids.shape[1] < 1:
        raise ValueError(f"generate: idx must be (B, S) token ids with B, S >= 1, got shape "
                         f"{ids.shape}; wrap one prompt as [ids]")
    if ids.dtype not in (np.int32, np.int64):
        ids = ids.astype(np.int64)          # uint8 would wrap sampled ids (274 -> 18)
    return ids


def _check_finite(flags: List[Any], prompt_length: int) -> None:
    """Raise if any step's logits held NaN or inf (one device-to-host copy for all steps)."""
    if not flags:
        return
    xp = backend.get_array_module(flags[0])
    ok = backend.to_host(xp.stack(flags))                   # (steps,) bool
    if ok.all():
        return
    step = int(np.argmin(ok))
    raise NonFiniteLogitsError(
        f"generate: the logits at step {step} (predicting position {prompt_length + step} of "
        f"the sequence) hold NaN or inf, so no token can be chosen from them; the model's "
        f"weights or activations are not finite (check them with "
        f"[n for n, p in model.named_parameters() if not np.isfinite(p.numpy()).all()])")
