"""``tinyattn.io``: file formats shared with other frameworks (docs/pretrained.md#safetensors).

    from tinyattn.io import load_safetensors, save_safetensors
    weights = load_safetensors("model.safetensors")        # name -> NumPy array (mmapped)
    save_safetensors(model.state_dict(), "model.safetensors")
    folder = resolve_pretrained("sentence-transformers/all-MiniLM-L6-v2")  # or a local folder

Sits beside ``tinyattn.serialization`` (tinyattn's own ``.npz`` checkpoints): below ``nn``
and ``models``, so both can read checkpoints with it.
"""
from __future__ import annotations

from .hub import (HUB_HINT, PretrainedError, load_weights, read_json, resolve_pretrained,
                  weight_files)
from .safetensors import (DTYPES, SafetensorsError, SafetensorsHeader, TensorInfo,
                          load_safetensors, read_safetensors_header, save_safetensors)

__all__ = ["load_safetensors", "save_safetensors", "read_safetensors_header",
           "SafetensorsError", "SafetensorsHeader", "TensorInfo", "DTYPES",
           "resolve_pretrained", "read_json", "PretrainedError", "HUB_HINT", "weight_files",
           "load_weights"]
