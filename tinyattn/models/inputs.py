"""Checks and conversions for what a user passes to a model: ids and padding masks."""
from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from .. import backend
from ..tensor import Tensor

__all__ = ["id_array", "attention_mask_array"]


def _array(value: Any, device: str) -> Any:
    data = value._data if isinstance(value, Tensor) else value
    if backend.device_of(data) == "cpu":
        data = np.asarray(data)
    return backend.to_device(data, device)


def id_array(value: Any, name: str, limit: int, device: str,
             shape: Optional[Tuple[int, ...]] = None) -> Any:
    """``value`` (list, NumPy array or Tensor) as a (B, S) integer array on ``device``, every
    id in [0, limit), or an error that names the argument and the value at fault."""
    try:
        data = _array(value, device)
    except ValueError:
        raise ValueError(f"{name} is ragged: pad every sequence to one length (the tokenizer "
                         f"does it with padding=True)") from None
    if data.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers (token ids), got dtype {data.dtype}")
    if data.ndim != 2:
        raise ValueError(f"{name} must be (B, S), a batch of sequences, got shape "
                         f"{tuple(data.shape)}; for one sequence use [ids]")
    if shape is not None and tuple(data.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(data.shape)} but input_ids has "
                         f"{tuple(shape)}; they must match")
    if data.shape[1] == 0:
        raise ValueError(f"{name} has no tokens (shape {tuple(data.shape)}); even an empty "
                         f"text has [CLS] and [SEP]")
    if data.size:
        low, high = backend.to_host(data.min()).item(), backend.to_host(data.max()).item()
        if low < 0 or high >= limit:
            bad = low if low < 0 else high
            raise ValueError(f"{name} holds {bad}, outside [0, {limit}): the ids do not come "
                             f"from this model's tokenizer (or the wrong argument was passed)")
    return data.astype(np.int64, copy=False)


def attention_mask_array(value: Any, shape: Tuple[int, ...], device: str) -> Any:
    """A Hugging Face padding mask (B, S) of 1 = real token, 0 = padding (ints, floats or
    bools) as the boolean key mask (B, 1, 1, S) tinyattn's attention takes (True = may
    attend); None when there is no padding at all."""
    if value is None:
        return None
    data = _array(value, device)
    if tuple(data.shape) != tuple(shape):
        raise ValueError(f"attention_mask has shape {tuple(data.shape)} but input_ids has "
                         f"{tuple(shape)}; it must be (B, S), 1 for real tokens, 0 for padding")
    if data.dtype != np.bool_:
        if data.dtype.kind not in "iuf":
            raise TypeError(f"attention_mask must hold 0/1 (or bools), got dtype {data.dtype}")
        xp = backend.get_array_module(data)
        if not bool(xp.all((data == 0) | (data == 1))):
            raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token), "
                             "Hugging Face's convention; got other values")
        data = data != 0
    if bool(data.all()):
        return None
    return data[:, None, None, :]                    # (B, S) -> (B, 1, 1, S)
