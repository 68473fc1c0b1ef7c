"""torch values made tinyattn's (a sample's arguments), tinyattn's results compared with torch's.

``to_tinyattn`` walks a sample's input, args and kwargs: tensors (float16, bfloat16, integer
and bool too; ``requires_grad`` kept), lists and tuples of them, dtypes, ``torch.Size``,
devices, memory formats and modules without parameters (a distance function) become what
``python -m tinyattn run-torch`` hands a script for the same torch value. The same torch
tensor met twice becomes the same tinyattn tensor (aliasing is part of an op's meaning:
``torch.add(x, x)``). Anything else torch-specific is refused with
``Unconvertible`` naming it, so a sample the harness cannot pass is reported, not dropped.

``assert_agrees`` compares a tinyattn result with torch's: structure (tensor, sequence,
number, None), shape, dtype and values, with torch.testing's default tolerances for the
dtype (NaN equal to NaN, as the OpInfo tests compare).
"""
from __future__ import annotations

import dataclasses
import numbers
from typing import Any, Dict, List, Tuple

import ml_dtypes
import numpy as np
import torch

import tinyattn
from tinyattn.printing import Size
from tinyattn.torch_shim.shim_names import device as shim_device
from tinyattn.torch_shim.shim_names import torch_dtype

from .torch_names import resolve

__all__ = ["Unconvertible", "Converter", "to_torch", "assert_agrees", "numpy_dtype",
           "shim_dtype"]

_NUMPY_OF = {torch.float16: np.float16, torch.float32: np.float32, torch.float64: np.float64,
             torch.bfloat16: ml_dtypes.bfloat16, torch.int8: np.int8, torch.int16: np.int16,
             torch.int32: np.int32, torch.int64: np.int64, torch.uint8: np.uint8,
             torch.bool: np.bool_, torch.complex64: np.complex64,
             torch.complex128: np.complex128}
_TORCH_OF = {np.dtype(v): k for k, v in _NUMPY_OF.items()}


class Unconvertible(Exception):
    """A torch value in a sample that tinyattn has no counterpart for."""


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    if dtype not in _NUMPY_OF:
        raise Unconvertible(f"{dtype} (tinyattn has no such dtype)")
    return np.dtype(_NUMPY_OF[dtype])


def shim_dtype(dtype: torch.dtype) -> Any:
    """What ``torch.float32`` (and friends) is under run-torch."""
    return torch_dtype(numpy_dtype(dtype))


def _array(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu().resolve_conj().resolve_neg()
    if t.dtype == torch.bfloat16:
        return t.float().numpy().astype(ml_dtypes.bfloat16)
    numpy_dtype(t.dtype)
    return t.numpy().copy()


class Converter:
    """One sample's conversion: remembers each torch tensor's tinyattn twin (``pairs``)."""

    def __init__(self) -> None:
        self.pairs: List[Tuple[torch.Tensor, tinyattn.Tensor]] = []
        self._seen: Dict[int, tinyattn.Tensor] = {}

    def __call__(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if isinstance(value, torch.dtype):
            return shim_dtype(value)
        if isinstance(value, torch.Size):
            return Size(tuple(value))
        if isinstance(value, torch.device):
            return shim_device(str(value))
        if isinstance(value, torch.memory_format):
            name = str(value).replace("torch.", "")
            found = resolve(name)
            if found is None:
                raise Unconvertible(f"torch.{name} (tinyattn has no memory formats)")
            return found
        if isinstance(value, torch.layout):
            found = getattr(tinyattn, str(value).replace("torch.", ""), None)
            if found is None:
                raise Unconvertible(f"{value} (tinyattn has no such layout)")
            return found
        if isinstance(value, torch.nn.Module):
            return self._module(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type) \
                and type(value).__module__.startswith("torch"):
            return self._options(value)
        if isinstance(value, torch.Generator) or type(value).__module__ \
                .startswith("torch"):
            raise Unconvertible(f"{type(value).__name__} {value!r}")
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            return type(value)(*(self(v) for v in value))
        if isinstance(value, (list, tuple)):
            return type(value)(self(v) for v in value)
        if isinstance(value, dict):
            return {key: self(v) for key, v in value.items()}
        return value

    def _module(self, module: torch.nn.Module) -> Any:
        """A torch module without parameters or buffers (the ``PairwiseDistance()`` an
        OpInfo passes as a distance function) as tinyattn's module of the same name, with
        the same public attributes, as run-torch would build it."""
        name = type(module).__name__
        twin = resolve(f"nn.{name}")
        if twin is None or any(True for _ in module.parameters()) or \
                any(True for _ in module.buffers()):
            raise Unconvertible(f"the module {module!r}")
        out = twin()
        for key, value in vars(module).items():
            if not key.startswith("_") and key != "training":
                setattr(out, key, self(value))
        return out
    def _options(self, value: Any) -> Any:
        """A torch options dataclass (``nn.LinearCrossEntropyOptions``) as the class of the
        same name the shim answers, field by field; Unconvertible when there is none."""
        name = type(value).__name__
        twin = resolve(f"nn.{name}") or resolve(name)
        if not isinstance(twin, type):
            raise Unconvertible(f"{name} {value!r}")
        return twin(**{field.name: self(getattr(value, field.name))
                       for field in dataclasses.fields(value)})

    def _tensor(self, t: torch.Tensor) -> tinyattn.Tensor:
        if id(t) in self._seen:
            return self._seen[id(t)]
        if t.layout != torch.strided:
            raise Unconvertible(f"a {t.dtype} {t.layout} tensor")
        out = tinyattn.tensor(_array(t), dtype=numpy_dtype(t.dtype))
        if t.requires_grad:
            out.requires_grad_(True)
        self._seen[id(t)] = out
        self.pairs.append((t, out))
        return out


def to_torch(value: Any) -> Any:
    """A tinyattn result as torch values (tensors, lists, numbers kept as they are)."""
    if isinstance(value, tinyattn.Tensor):
        array = np.asarray(value.detach().numpy())
        if array.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
        if array.dtype not in _TORCH_OF:
            raise AssertionError(f"tinyattn returned a tensor of dtype {array.dtype}")
        return torch.from_numpy(np.array(array, order="C", copy=True))
    if isinstance(value, (list, tuple)):
        return [to_torch(v) for v in value]
    return value


def _kind(value: Any) -> str:
    if isinstance(value, (torch.Tensor, tinyattn.Tensor)):
        return "tensor"
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (torch.dtype, np.dtype)) or type(value).__name__ == "dtype":
        return "dtype"
    if isinstance(value, (list, tuple)):       # torch.Size and return_types too
        return "sequence"
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "float"
    return type(value).__name__


def assert_agrees(actual: Any, expected: Any, where: str = "output", values: bool = True
                  ) -> None:
    """Raise AssertionError naming ``where`` unless tinyattn's ``actual`` matches torch's
    (structure, shapes and dtypes only with ``values=False``)."""
    kind, want = _kind(actual), _kind(expected)
    if kind != want:
        raise AssertionError(f"{where}: tinyattn gave a {kind} ({_short(actual)}), torch a "
                             f"{want} ({_short(expected)})")
    if kind == "sequence":
        if len(actual) != len(expected):
            raise AssertionError(f"{where}: tinyattn gave {len(actual)} items, torch "
                                 f"{len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_agrees(a, e, f"{where}[{i}]", values)
        return
    if kind == "tensor":
        _assert_tensor(actual, expected, where, values)
        return
    if kind == "dtype":
        if str(actual).replace("torch.", "") != str(expected).replace("torch.", ""):
            raise AssertionError(f"{where}: dtype {actual} where torch gives {expected}")
        return
    if kind in ("int", "float", "bool"):
        if not values:
            return
        torch.testing.assert_close(actual, expected, equal_nan=True, check_dtype=False,
                                   msg=lambda m: f"{where}: {m}")
        return
    if actual != expected:
        raise AssertionError(f"{where}: {actual!r} where torch gives {expected!r}")


def _assert_tensor(actual: tinyattn.Tensor, expected: torch.Tensor, where: str,
                   values: bool = True) -> None:
    if tuple(actual.shape) != tuple(expected.shape):
        raise AssertionError(f"{where}: shape {tuple(actual.shape)} where torch gives "
                             f"{tuple(expected.shape)}")
    if np.dtype(actual.dtype) != numpy_dtype(expected.dtype):
        raise AssertionError(f"{where}: dtype {np.dtype(actual.dtype).name} where torch "
                             f"gives {str(expected.dtype).replace('torch.', '')}")
    if not values:
        return
    torch.testing.assert_close(to_torch(actual), expected.detach(), equal_nan=True,
                               check_stride=False, check_device=False,
                               msg=lambda m: f"{where}: {m}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."
