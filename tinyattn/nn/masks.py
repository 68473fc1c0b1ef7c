"""Attention masks (docs/nn.md#masks). Shapes: S_q queries, S_k keys, B batch.

Two conventions, each PyTorch's where PyTorch has the name:
- "may attend" masks, True = this query may attend to this key: the boolean ``attn_mask`` of
  ``F.scaled_dot_product_attention`` and tinyattn's ``MultiHeadAttention(mask=...)``;
- "padding" masks, True = this key is padding and must be ignored: PyTorch's
  ``key_padding_mask`` (``nn.MultiheadAttention``, ``MultiHeadAttention``, the transformer
  layers' ``*_key_padding_mask``).

- ``causal_mask(S)``                  (S, S)     may attend: query i sees keys 0..i
- ``sliding_window_mask(S, w)``       (S, S)     may attend: keys i-w+1..i (local attention)
- ``key_padding_mask(lengths, S)``    (B, S)     padding: True past each row's length
- ``key_padding_mask(ids, pad_id=p)`` (B, S)     padding: True where ids == p
- ``combine_masks(a, b, ...)``        broadcast  "may attend" masks ANDed together
- ``random_block_mask(S, b, r)``      (S, S)     may attend: r random key blocks per query block
- ``global_tokens_mask(S, tokens)``   (S, S)     may attend: global tokens see and are seen by all

BigBird's layout is the union (``|``) of a window, global tokens and random blocks. A mask
only hides scores: the dense and tiled paths still compute every one (docs/long_sequences.md).

To use a padding mask as a "may attend" mask, negate it and give it the head and query axes:
``~pad[:, None, None, :]`` is (B, 1, 1, S_k).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import backend
from ..tensor import Tensor

__all__ = ["causal_mask", "key_padding_mask", "sliding_window_mask", "combine_masks",
           "random_block_mask", "global_tokens_mask"]


def _check_length(name: str, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}: {what} must be a positive int, got {value!r}")
    return int(value)


def causal_mask(seq_len: int, seq_len_k: Optional[int] = None, device: str = "cpu") -> Tensor:
    """(S_q, S_k) bool, True where key j <= query i + (S_k - S_q).

    For S_q == S_k (the default) this is the lower triangle: token i sees itself and the past.
    With S_k > S_q (new queries after S_k - S_q cached tokens) the last query sees every key:
    the triangle is aligned to the bottom right, as a key/value cache needs.
    """
    s_q = _check_length("causal_mask", seq_len, "seq_len")
    s_k = s_q if seq_len_k is None else _check_length("causal_mask", seq_len_k, "seq_len_k")
    xp = backend.array_module_for(device)
    return Tensor._wrap(xp.tri(s_q, s_k, k=s_k - s_q, dtype=bool))   # (S_q, S_k)


def sliding_window_mask(seq_len: int, window: int, causal: bool = True,
                        device: str = "cpu") -> Tensor:
    """(S, S) bool for local (band) attention: True where |i - j| < ``window``, and also
    j <= i when ``causal``. A causal query sees ``window`` keys (itself and window - 1 before);
    a non-causal one sees up to 2 * window - 1. ``window >= S`` gives the plain causal (or
    full) mask."""
    s = _check_length("sliding_window_mask", seq_len, "seq_len")
    w = _check_length("sliding_window_mask", window, "window")
    xp = backend.array_module_for(device)
    pos = xp.arange(s)
    distance = pos[:, None] - pos[None, :]      # (S, 1) - (1, S) -> (S, S): i - j
    keep = xp.abs(distance) < w
    if causal:
        keep &= distance >= 0
    return Tensor._wrap(keep)


def key_padding_mask(lengths_or_ids: Any, seq_len: Optional[int] = None,
                     pad_id: Optional[int] = None) -> Tensor:
    """(B, S) bool, True for PADDING (PyTorch's ``key_padding_mask`` convention), from either

    - ``lengths`` (B,) integers: row b is False in its first lengths[b] positions and True
      after (``seq_len`` columns, default max(lengths)); or
    - ``ids`` (B, S) integers with ``pad_id``: True where ids == pad_id.
    """
    data = lengths_or_ids._data if isinstance(lengths_or_ids, Tensor) else lengths_or_ids
    if not hasattr(data, "dtype"):
        data = np.asarray(data)
    if not np.issubdtype(data.dtype, np.integer):
        raise TypeError(f"key_padding_mask: expected integer lengths (B,) or ids (B, S), got "
                        f"dtype {data.dtype}")
    xp = backend.get_array_module(data)
    if pad_id is not None:
        if data.ndim != 2:
            raise ValueError(f"key_padding_mask: with pad_id, pass token ids of shape (B, S); "
                             f"got shape {tuple(data.shape)}")
        return Tensor._wrap(data == pad_id)
    if data.ndim != 1:
        raise ValueError(f"key_padding_mask: pass lengths of shape (B,) (or ids (B, S) "
                         f"together with pad_id=...); got shape {tuple(data.shape)}")
    longest = int(data.max()) if data.size else 0
    if data.size and int(data.min()) < 0:
        raise ValueError(f"key_padding_mask: lengths must be >= 0, got "
                         f"{backend.to_host(data)}")
    s = longest if seq_len is None else int(seq_len)
    if longest > s:
        raise ValueError(f"key_padding_mask: a length of {longest} does not fit in "
                         f"seq_len={s}; pass a larger seq_len")
    return Tensor._wrap(xp.arange(s)[None, :] >= data[:, None])  # (1, S) >= (B, 1) -> (B, S)


def combine_masks(*masks: Any) -> Optional[Tensor]:
    """Logical AND of boolean masks (``None`` entries are skipped), broadcast together."""
    result = None
    for i, mask in enumerate(masks):
        if mask is None:
            continue
        data = mask._data if isinstance(mask, Tensor) else mask
        if not hasattr(data, "dtype") or data.dtype != np.bool_:
            raise TypeError(f"combine_masks: mask {i} must be boolean (True = may attend), got "
                            f"{getattr(data, 'dtype', type(data).__name__)}")
        if result is not None:
            try:
                np.broadcast_shapes(tuple(result.shape), tuple(data.shape))
            except ValueError:
                raise ValueError(f"combine_masks: mask {i} of shape {tuple(data.shape)} does not "
                                 f"broadcast with the masks before it, shape "
                                 f"{tuple(result.shape)}") from None
        result = data if result is None else result & data
    return None if result is None else Tensor._wrap(result)


def random_block_mask(seq_len: int, block_size: int, num_random_blocks: int,
                      generator: Any = None, device: str = "cpu") -> Tensor:
    """(S, S) bool, BigBird's random part: the positions are cut into blocks of
    ``block_size`` (the last may be shorter), and each query block may attend
    ``num_random_blocks`` key blocks drawn without replacement (at most all of them), from
    ``generator`` (a NumPy Generator; default: tinyattn's, seeded by ``manual_seed``)."""
    s = _check_length("random_block_mask", seq_len, "seq_len")
    size = _check_length("random_block_mask", block_size, "block_size")
    if isinstance(num_random_blocks, bool) or not isinstance(num_random_blocks,
                                                             (int, np.integer)) \
            or num_random_blocks < 0:
        raise ValueError(f"random_block_mask: num_random_blocks must be an int >= 0, got "
                         f"{num_random_blocks!r}")
    gen = generator if generator is not None else backend.default_generator("cpu")
    nb = -(-s // size)
    layout = np.zeros((nb, nb), dtype=bool)                  # (query block, key block)
    for b in range(nb):
        layout[b, gen.permutation(nb)[:min(int(num_random_blocks), nb)]] = True
    keep = np.repeat(np.repeat(layout, size, axis=0), size, axis=1)[:s, :s]   # (S, S)
    return Tensor._wrap(backend.to_device(keep, backend.normalize_device(device)))


def global_tokens_mask(seq_len: int, global_tokens: Any, device: str = "cpu") -> Tensor:
    """(S, S) bool, True in the rows and columns of ``global_tokens`` (positions, e.g. [0]
    for a [CLS] token): a global token attends every position and every position attends it
    (Longformer's global attention, BigBird's global tokens)."""
    s = _check_length("global_tokens_mask", seq_len, "seq_len")
    tokens = np.asarray(global_tokens, dtype=np.int64).reshape(-1)
    if tokens.size and (tokens.min() < -s or tokens.max() >= s):
        raise ValueError(f"global_tokens_mask: positions {tokens.tolist()} do not all lie in "
                         f"0..{s - 1} (seq_len={s})")
    is_global = np.zeros(s, dtype=bool)
    is_global[tokens] = True
    keep = is_global[:, None] | is_global[None, :]           # (S, 1) | (1, S) -> (S, S)
    return Tensor._wrap(backend.to_device(keep, backend.normalize_device(device)))
