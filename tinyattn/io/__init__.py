"""``tinyattn.io``: file formats shared with other frameworks (docs/pretrained.md#safetensors).

    from tinyattn.io import load_safetensors, save_safetensors
    weights = load_safetensors("model.safetensors")        # name -> NumPy array (mmapped)
    save_safetensors(model.state_dict(), "model.safetensors")

Sits beside ``tinyattn.serialization`` (tinyattn's own ``.npz`` checkpoints): below ``nn``
and ``models``, so both can read checkpoints with it.
"""
from __future__ import annotations

from .safetensors import (DTYPES, SafetensorsError, SafetensorsHeader, TensorInfo,
                          load_safetensors, read_safetensors_header, save_safetensors)

__all__ = ["load_safetensors", "save_safetensors", "read_safetensors_header",
           "SafetensorsError", "SafetensorsHeader", "TensorInfo", "DTYPES"]
