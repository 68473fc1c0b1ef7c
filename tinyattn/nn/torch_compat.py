"""Move state dicts between PyTorch and tinyattn using plain arrays (docs/nn.md#pytorch).

tinyattn never imports torch: these functions take any mapping of name -> array-like (torch
tensors are turned into NumPy arrays with ``.detach().cpu().numpy()`` when they have it).

``torch.nn.MultiheadAttention`` stores the three input projections packed into one matrix:
``in_proj_weight`` (3D, D) = [W_q; W_k; W_v] stacked by rows, and ``in_proj_bias`` (3D,) =
[b_q; b_k; b_v]. (With kdim or vdim different from D it keeps ``q_proj_weight``,
``k_proj_weight``, ``v_proj_weight`` apart, but still packs the bias.) tinyattn keeps four
``Linear`` layers, ``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``. Since x W^T for the packed
W is [x W_q^T, x W_k^T, x W_v^T] side by side, unpacking is just splitting rows in three.

    from tinyattn.nn.torch_compat import convert_torch_state_dict
    mha.load_state_dict(convert_torch_state_dict(torch_mha.state_dict()))
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Mapping

import numpy as np

from .. import precision

__all__ = ["convert_torch_state_dict", "convert_torch_mha_state_dict", "to_torch_state_dict"]

_PROJ = ("q", "k", "v")


def _to_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):                 # a torch tensor, converted without importing
        value = value.detach().cpu()
        if str(getattr(value, "dtype", "")) == "torch.bfloat16":
            # NumPy has no bfloat16, so torch's .numpy() refuses it: go through float32,
            # which holds every bfloat16 value exactly, and back to ml_dtypes' bfloat16
            return value.float().numpy().astype(precision.BFLOAT16)
        value = value.numpy()
    elif hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()                    # a tinyattn Tensor
    return np.array(value, copy=True)


def convert_torch_state_dict(state: Mapping[str, Any]) -> "OrderedDict[str, np.ndarray]":
    """Every key of a torch state dict, with each attention's packed projections unpacked.

    Works for a bare ``MultiheadAttention`` (``in_proj_weight`` -> ``q_proj.weight``, ...)
    and for models that contain them (``self_attn.in_proj_weight`` ->
    ``self_attn.q_proj.weight``, ...). Other keys are copied unchanged. Raises for
    ``bias_k``/``bias_v`` (``add_bias_kv=True``), which tinyattn does not implement.
    """
    out: "OrderedDict[str, np.ndarray]" = OrderedDict()
    for key, value in state.items():
        prefix, _, name = key.rpartition(".")
        prefix = prefix + "." if prefix else ""
        if name in ("bias_k", "bias_v"):
            raise ValueError(f"convert_torch_state_dict: {key} comes from "
                             f"MultiheadAttention(add_bias_kv=True), which tinyattn does not "
                             f"support; build the torch module with add_bias_kv=False")
        array = _to_numpy(value)
        if name in ("in_proj_weight", "in_proj_bias"):
            if array.shape[0] % 3 != 0:
                raise ValueError(f"convert_torch_state_dict: {key} has shape {array.shape}; "
                                 f"expected 3 * d_model rows (q, k, v stacked)")
            kind = "weight" if name == "in_proj_weight" else "bias"
            for proj, part in zip(_PROJ, np.split(array, 3, axis=0)):  # (3D, .) -> 3 x (D, .)
                out[f"{prefix}{proj}_proj.{kind}"] = part.copy()
        elif name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
            out[f"{prefix}{name[0]}_proj.weight"] = array
        else:
            out[key] = array
    return out


def convert_torch_mha_state_dict(state: Mapping[str, Any]) -> "OrderedDict[str, np.ndarray]":
    """The state dict of one ``torch.nn.MultiheadAttention`` in tinyattn's keys
    (``q_proj.weight``, ``q_proj.bias``, ..., ``out_proj.bias``)."""
    converted = convert_torch_state_dict(state)
    expected = {f"{p}_proj.weight" for p in _PROJ + ("out",)}
    if not expected <= set(converted):
        raise ValueError(f"convert_torch_mha_state_dict: expected the keys of one "
                         f"MultiheadAttention (in_proj_weight, out_proj.weight, ...), got "
                         f"{sorted(state)}")
    return converted


def to_torch_state_dict(state: Mapping[str, Any], packed: bool = True
                        ) -> "OrderedDict[str, np.ndarray]":
    """The reverse: pack every ``q_proj/k_proj/v_proj`` triple into ``in_proj_weight`` and
    ``in_proj_bias`` (or, ``packed=False``, ``q_proj_weight``... as torch does when kdim or
    vdim differ). Values stay NumPy arrays: wrap them with ``torch.from_numpy``."""
    arrays: Dict[str, np.ndarray] = {k: _to_numpy(v) for k, v in state.items()}
    out: "OrderedDict[str, np.ndarray]" = OrderedDict()
    for key, array in arrays.items():
        prefix, _, name = key.rpartition(".")          # e.g. "self_attn.q_proj", "weight"
        owner, _, proj = prefix.rpartition(".")
        owner = owner + "." if owner else ""
        if proj not in ("q_proj", "k_proj", "v_proj"):
            out[key] = array
            continue
        if proj != "q_proj":
            continue                                   # emitted together with q_proj
        parts = [arrays[f"{owner}{p}_proj.{name}"] for p in _PROJ]
        if name == "weight" and not packed:
            for p, part in zip(_PROJ, parts):
                out[f"{owner}{p}_proj_weight"] = part
        else:
            out[f"{owner}in_proj_{name}"] = np.concatenate(parts, axis=0)   # 3 x (D, .) -> (3D, .)
    return out
