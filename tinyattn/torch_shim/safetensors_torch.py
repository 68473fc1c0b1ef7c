"""``safetensors.torch`` under ``run-torch``: the real module imports torch's complex dtypes,
so the finder answers ``import safetensors.torch`` with this one, over tinyattn's own reader
and writer (tinyattn/io/safetensors.py). As in safetensors' torch module, bfloat16 stays
bfloat16 (tinyattn's ``load_safetensors`` widens it by default; that name is tinyattn's)."""
from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Mapping, Optional

from ..io.safetensors import load_safetensors, save_safetensors
from ..tensor import Tensor, tensor

__all__ = ["load_file", "save_file", "load", "save"]


def load_file(filename: Any, device: Any = "cpu") -> Dict[str, Tensor]:
    """name -> Tensor, dtypes as stored (BF16 as bfloat16), on ``device``."""
    arrays = load_safetensors(os.fspath(filename), mmap=False, keep_bfloat16=True)
    return {name: tensor(array, device=str(device)) for name, array in arrays.items()}


def save_file(tensors: Mapping[str, Tensor], filename: Any,
              metadata: Optional[Mapping[str, str]] = None) -> None:
    save_safetensors(tensors, os.fspath(filename), metadata=metadata)


def load(data: bytes) -> Dict[str, Tensor]:
    """``load_file`` of bytes (``save``'s output)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tensors.safetensors")
        with open(path, "wb") as f:
            f.write(data)
        return load_file(path)


def save(tensors: Mapping[str, Tensor], metadata: Optional[Mapping[str, str]] = None) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "tensors.safetensors")
        save_file(tensors, path, metadata)
        with open(path, "rb") as f:
            return f.read()
