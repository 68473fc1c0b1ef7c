"""Read a Hugging Face checkpoint folder's weights into one name -> array dict.

Handles the layouts BERT checkpoints come in: ``model.safetensors``, sharded safetensors
(``model.safetensors.index.json``), names under a ``bert.`` prefix (checkpoints saved from a
task model such as ``BertForMaskedLM``), and the TensorFlow-era ``LayerNorm.gamma``/``beta``.
Pickled weights (``pytorch_model.bin``) are refused: loading a pickle can run code.
"""
from __future__ import annotations

import os
from typing import Dict, List, Tuple

import numpy as np

from ..io import PretrainedError, load_safetensors, read_json

__all__ = ["load_checkpoint_state", "weight_files"]

_ENCODER_PREFIXES = ("embeddings.", "encoder.", "pooler.")


def weight_files(folder: str) -> List[str]:
    """The safetensors file(s) of a checkpoint folder, or a PretrainedError saying why not."""
    single = os.path.join(folder, "model.safetensors")
    if os.path.isfile(single):
        return [single]
    index = read_json(folder, "model.safetensors.index.json", required=False)
    if index is not None:
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if not isinstance(weight_map, dict) or not weight_map:
            raise PretrainedError(f"{folder}/model.safetensors.index.json has no weight_map")
        shards = sorted(set(weight_map.values()))
        for shard in shards:
            if not isinstance(shard, str) or os.path.basename(shard) != shard:
                raise PretrainedError(f"{folder}: the shard name {shard!r} is not a file name")
            if not os.path.isfile(os.path.join(folder, shard)):
                raise PretrainedError(f"{folder}: shard {shard} listed in "
                                      f"model.safetensors.index.json is missing")
        return [os.path.join(folder, shard) for shard in shards]
    pickled = [n for n in ("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack")
               if os.path.isfile(os.path.join(folder, n))]
    hint = (f" It has only {', '.join(pickled)}: convert it once with transformers "
            f"(AutoModel.from_pretrained(folder).save_pretrained(folder, "
            f"safe_serialization=True)) or download the safetensors version.") if pickled else ""
    raise PretrainedError(f"{folder} has no model.safetensors (tinyattn reads weights only "
                          f"in the safetensors format, which cannot run code).{hint}")


def load_checkpoint_state(folder: str, mmap: bool = True
                          ) -> Tuple[Dict[str, np.ndarray], List[str]]:
    """(encoder weights under BertModel's names, names of the other weights in the files).
    ``mmap=False`` reads the arrays into memory instead of mapping the file (for a caller
    that converts them and drops each original: mapped pages it read would stay counted)."""
    raw: Dict[str, np.ndarray] = {}
    for path in weight_files(folder):
        for name, array in load_safetensors(path, mmap=mmap).items():
            if name in raw:
                raise PretrainedError(f"{folder}: {name} appears in two shards")
            raw[name] = array
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
