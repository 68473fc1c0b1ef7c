"""Read a Hugging Face checkpoint folder's weights into one name -> array dict.

Handles the layouts BERT checkpoints come in: ``model.safetensors``, sharded safetensors
(``model.safetensors.index.json``), names under a ``bert.`` prefix (checkpoints saved from a
task model such as ``BertForMaskedLM``), and the TensorFlow-era ``LayerNorm.gamma``/``beta``.
Pickled weights (``pytorch_model.bin``) are refused: loading a pickle can run code.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from ..io import PretrainedError, load_weights, weight_files

__all__ = ["load_checkpoint_state", "weight_files"]

_ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")


def load_checkpoint_state(folder: str, mmap: bool = True
                          ) -> Tuple[Dict[str, np.ndarray], List[str]]:
    """(encoder weights under BertModel's names, names of the other weights in the files).
    ``mmap=False`` reads the arrays into memory instead of mapping the file (for a caller
    that converts them and drops each original: mapped pages it read would stay counted)."""
    raw = load_weights(folder, mmap=mmap)
    strip = not any(n.startswith(_ENCODER_PREFIXES) for n in raw) and any(
        n.startswith("bert.") for n in raw)
    state: Dict[str, np.ndarray] = {}
    unused: List[str] = []
    for name, array in raw.items():
        key = name[len("bert."):] if strip and name.startswith("bert.") else name
        if key.endswith("LayerNorm.gamma"):
            key = key[:-len("gamma")] + "weight"
        elif key.endswith("LayerNorm.beta"):
            key = key[:-len("beta")] + "bias"
        if key == "embeddings.position_ids":       # a buffer older transformers saved
            positions = np.asarray(array).reshape(-1)
            if not np.array_equal(positions, np.arange(positions.size)):
                raise PretrainedError(f"{folder}: embeddings.position_ids is not 0, 1, 2, ...; "
                                      f"tinyattn's BertModel uses absolute positions from 0")
        elif key == "embeddings.token_type_ids":   # another buffer (all zeros)
            pass
        elif key.startswith(_ENCODER_PREFIXES):
            state[key] = array
        else:
            unused.append(name)                    # a task head (cls., classifier., ...)
    if not state:
        raise PretrainedError(f"{folder}: the weights hold no BERT encoder (no names under "
                              f"embeddings., encoder.)")
    return state, sorted(unused)
