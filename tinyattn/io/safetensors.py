"""The safetensors format in pure NumPy: read (memory-mapped), write (atomic), validate.

A safetensors file is three parts (huggingface/safetensors, "format"):

    [8 bytes]  N, the header's length, an unsigned little-endian 64-bit integer
    [N bytes]  a UTF-8 JSON object: name -> {"dtype": "F32", "shape": [2, 3],
               "data_offsets": [begin, end]}, plus an optional "__metadata__": {str: str}
    [rest]     the tensors' bytes, little-endian, row-major; offsets count from here

Every check runs on the header before a single tensor byte is read, and nothing is ever
allocated from a size the file declares: each declared size is first compared with the
file's own size. A malformed or hostile file raises ``SafetensorsError`` (a ValueError) that
names the tensor and the values at fault.

Reading maps the file into memory (``mmap=True``): each array is a view of the mapping, so
loading costs no copy and no memory beyond the pages actually touched. The mapping is
copy-on-write: writing into a loaded array changes this process's copy, never the file.
BF16 (which NumPy lacks) is widened to float32, the one case that must allocate.
"""
from __future__ import annotations

import json
import math
import mmap as _mmap
import os
import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from .. import backend, precision
from ..serialization import atomic_write
from ..tensor import Tensor

__all__ = ["SafetensorsError", "TensorInfo", "SafetensorsHeader", "read_safetensors_header",
           "load_safetensors", "save_safetensors", "DTYPES"]

# safetensors dtype name -> NumPy dtype of the stored bytes (little-endian). BF16 is read as
# raw uint16 and widened to float32 (the upper half of a float32's bits).
DTYPES: Dict[str, np.dtype] = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"), "I8": np.dtype("i1"), "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"), "U16": np.dtype("<u2"), "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
# Names the format defines that NumPy cannot hold: refused with their own message.
_UNSUPPORTED = ("F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "C64")
# NumPy dtype (kind, itemsize) -> safetensors name, for writing.
_NAMES = {(np.dtype(v).kind, np.dtype(v).itemsize): k for k, v in DTYPES.items() if k != "BF16"}

_MAX_HEADER = 100_000_000  # bytes; the reference implementation's limit too
_MAX_NDIM = 64
_KEYS = {"dtype", "shape", "data_offsets"}


class SafetensorsError(ValueError):
    """A file is not valid safetensors (or holds something tinyattn cannot read)."""


@dataclass(frozen=True)
class TensorInfo:
    """One header entry: stored dtype name, shape, and byte range within the data part."""
    name: str
    dtype: str
    shape: Tuple[int, ...]
    begin: int
    end: int


@dataclass(frozen=True)
class SafetensorsHeader:
    """A validated header: the tensors (in file order of their bytes), the metadata, and where
    the data part starts in the file."""
    tensors: Dict[str, TensorInfo]
    metadata: Optional[Dict[str, str]]
    data_start: int
    file_size: int


# ---------------------------------------------------------------------------- reading
def read_safetensors_header(path: str) -> SafetensorsHeader:
    """Read and validate the header of ``path`` (the tensor bytes are not read)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        if file_size < 8:
            raise SafetensorsError(f"{path}: {file_size} bytes is too short for a safetensors "
                                   f"file (the header length alone takes 8 bytes)")
        (length,) = struct.unpack("<Q", f.read(8))
        if length > file_size - 8:
            raise SafetensorsError(f"{path}: the header claims {length:,} bytes but the file "
                                   f"has only {file_size - 8:,} after the length field; the "
                                   f"file is truncated or not safetensors")
        if length > _MAX_HEADER:
            raise SafetensorsError(f"{path}: the header claims {length:,} bytes, more than "
                                   f"the {_MAX_HEADER:,} the format allows")
        raw = f.read(length)
    tensors, metadata = _parse_header(raw, path)
    data_size = file_size - 8 - length
    _check_layout(tensors, data_size, path)
    return SafetensorsHeader(tensors, metadata, 8 + length, file_size)


def _parse_header(raw: bytes, path: str) -> Tuple[Dict[str, TensorInfo], Optional[dict]]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SafetensorsError(f"{path}: the header is not UTF-8 ({exc})") from None

    def no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
        seen: Dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise SafetensorsError(f"{path}: the header names {key!r} twice")
            seen[key] = value
        return seen

    try:
        header = json.loads(text, object_pairs_hook=no_duplicates, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise SafetensorsError(f"{path}: the header is not valid JSON ({exc}); the file is "
                               f"corrupt or not safetensors") from None
    except RecursionError:
        raise SafetensorsError(f"{path}: the header's JSON is nested too deeply") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: the header must be a JSON object (name -> tensor), "
                               f"got a JSON {type(header).__name__}")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(v, str) for v in metadata.values())):
        raise SafetensorsError(f"{path}: __metadata__ must be an object of string values, "
                               f"got {_short(metadata)}")
    tensors = {name: _parse_entry(name, entry, path) for name, entry in header.items()}
    return tensors, metadata


def _parse_entry(name: str, entry: Any, path: str) -> TensorInfo:
    where = f"{path}: tensor {name!r}"
    if not isinstance(entry, dict):
        raise SafetensorsError(f"{where}: its entry must be an object with dtype, shape and "
                               f"data_offsets, got {_short(entry)}")
    if set(entry) != _KEYS:
        missing, extra = sorted(_KEYS - set(entry)), sorted(set(entry) - _KEYS)
        raise SafetensorsError(f"{where}: its entry must have exactly the keys dtype, shape, "
                               f"data_offsets (missing {missing}, unexpected {extra})")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype in _UNSUPPORTED:
        raise SafetensorsError(f"{where}: dtype {dtype} has no NumPy equivalent, so tinyattn "
                               f"cannot read it; convert the checkpoint to F32, F16 or BF16")
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise SafetensorsError(f"{where}: unknown dtype {_short(dtype)}; known: "
                               f"{', '.join(DTYPES)}")
    if not isinstance(shape, list) or len(shape) > _MAX_NDIM or not all(
            _is_count(n) and n <= _MAX_DIM for n in shape):
        raise SafetensorsError(f"{where}: shape must be a list of non-negative integers of "
                               f"at most {_MAX_DIM} (NumPy's limit), got {_short(shape)}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
        raise SafetensorsError(f"{where}: data_offsets must be [begin, end], two non-negative "
                               f"integers, got {_short(offsets)}")
    begin, end = offsets
    if end < begin:
        raise SafetensorsError(f"{where}: data_offsets [{begin}, {end}] end before they begin")
    expected = math.prod(shape) * DTYPES[dtype].itemsize  # Python ints: no overflow
    if end - begin != expected:
        raise SafetensorsError(f"{where}: data_offsets [{begin}, {end}] span {end - begin:,} "
                               f"bytes, but shape {shape} of {dtype} needs {expected:,}")
    return TensorInfo(name, dtype, tuple(shape), begin, end)


def _check_layout(tensors: Dict[str, TensorInfo], data_size: int, path: str) -> None:
    """The byte ranges must tile the data part exactly: in range, no overlap, no gap."""
    position, previous = 0, None
    for info in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if info.end > data_size:
            raise SafetensorsError(f"{path}: tensor {info.name!r} has data_offsets "
                                   f"[{info.begin}, {info.end}] past the end of the data "
                                   f"({data_size:,} bytes); the file is truncated or corrupt")
        if info.begin < position:
            raise SafetensorsError(f"{path}: tensors {previous.name!r} [{previous.begin}, "
                                   f"{previous.end}] and {info.name!r} [{info.begin}, "
                                   f"{info.end}] overlap")
        if info.begin > position:
            raise SafetensorsError(f"{path}: bytes [{position}, {info.begin}) of the data "
                                   f"belong to no tensor (a gap before {info.name!r})")
        position, previous = info.end, info
    if position != data_size:
        raise SafetensorsError(f"{path}: the tensors cover {position:,} bytes of data but "
                               f"the file has {data_size:,}; the trailing bytes belong to no "
                               f"tensor")


def load_safetensors(path: str, mmap: bool = True, keep_bfloat16: bool = False
                     ) -> Dict[str, np.ndarray]:
    """name -> NumPy array, in the file's order. ``mmap=True`` maps the file and returns
    views of it (copy-on-write: writable, but writes never reach the file); ``mmap=False``
    reads each tensor into its own array. BF16 tensors come back as float32 (what the
    pretrained-model loaders compute in), or as bfloat16 with ``keep_bfloat16=True``."""
    header = read_safetensors_header(path)
    arrays: Dict[str, np.ndarray] = {}
    data_size = header.file_size - header.data_start
    with open(os.fspath(path), "rb") as f:
        mapped = None
        if mmap and data_size > 0:
            mapped = _mmap.mmap(f.fileno(), 0, access=_mmap.ACCESS_COPY)
        for name, info in header.tensors.items():
            stored = DTYPES[info.dtype]
            count = (info.end - info.begin) // stored.itemsize
            start = header.data_start + info.begin
            if mapped is not None:
                flat = np.frombuffer(mapped, dtype=stored, count=count, offset=start)
                if not flat.flags.aligned:
                    flat = flat.copy()  # an unaligned view would make every op slow
            else:
                flat = np.empty(count, dtype=stored)
                f.seek(start)
                if f.readinto(memoryview(flat).cast("B")) != info.end - info.begin:
                    raise SafetensorsError(f"{path}: the file shrank while tensor "
                                           f"{name!r} was read")
            array = flat.reshape(info.shape)
            if info.dtype == "BF16":
                array = array.view(precision.BFLOAT16) if keep_bfloat16 else _bf16_to_float32(array)
            arrays[name] = array
    return arrays


def _bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 is the top 16 bits of a float32: shift them back into place."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


# ---------------------------------------------------------------------------- writing
def save_safetensors(tensors: Mapping[str, Any], path: str,
                     metadata: Optional[Mapping[str, str]] = None) -> None:
    """Write ``tensors`` (name -> NumPy array, CuPy array or Tensor; ``model.state_dict()``
    works as is) to ``path`` in safetensors format, atomically (temporary file, then rename).

    The result loads in ``safetensors.numpy.load_file`` and, for a state dict with Hugging
    Face names, in ``transformers``. Tensors are laid out by decreasing item size, and the
    header is padded to a multiple of 8 bytes, so every tensor is aligned in the file.
    """
    if not isinstance(tensors, Mapping):
        raise TypeError(f"save_safetensors: tensors must be a dict of name -> array, got "
                        f"{type(tensors).__name__}")
    if metadata is not None and not (isinstance(metadata, Mapping) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise TypeError(f"save_safetensors: metadata must be a dict of str -> str, got "
                        f"{_short(metadata)}")
    arrays = {name: _host_array(name, value) for name, value in tensors.items()}
    order = sorted(arrays, key=lambda n: (-arrays[n].dtype.itemsize, n))
    header: Dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    position = 0
    for name in order:
        array = arrays[name]
        header[name] = {"dtype": _name_of(array.dtype),
                        "shape": list(array.shape),
                        "data_offsets": [position, position + array.nbytes]}
        position += array.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)     # pad with spaces: data starts 8-byte aligned
    with atomic_write(os.fspath(path)) as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for name in order:
            f.write(memoryview(arrays[name].reshape(-1).view(np.uint8)))


def _host_array(name: Any, value: Any) -> np.ndarray:
    """A C-contiguous little-endian host copy of ``value``, or a TypeError naming it."""
    if not isinstance(name, str):
        raise TypeError(f"save_safetensors: tensor names must be str, got {name!r}")
    if name == "__metadata__":
        raise ValueError("save_safetensors: '__metadata__' is reserved for the metadata; "
                         "pass metadata= instead")
    data = value._data if isinstance(value, Tensor) else value
    array = np.asarray(backend.to_host(data) if backend.device_of(data) != "cpu" else data)
    if not precision.is_bfloat16(array.dtype) and (array.dtype.kind, array.dtype.itemsize) not in _NAMES:
        raise TypeError(f"save_safetensors: tensor {name!r} has dtype {array.dtype}; "
                        f"safetensors stores floats (16/32/64 bit), integers and bool")
    # (np.ascontiguousarray would turn a 0-d array into shape (1,))
    return np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")


def _name_of(dtype: np.dtype) -> str:
    return "BF16" if precision.is_bfloat16(dtype) else _NAMES[(dtype.kind, dtype.itemsize)]


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_MAX_DIM = int(np.iinfo(np.intp).max)    # NumPy's largest dimension


class _LongInteger:
    """A JSON integer of more digits than any count can have (Python refuses to convert one
    of over 4300 digits); kept as text so the entry's check names it and its tensor."""

    def __init__(self, digits: str):
        self.digits = digits

    def __repr__(self) -> str:
        return f"<an integer of {len(self.digits)} digits>"


def _parse_int(digits: str) -> Any:
    return int(digits) if len(digits) <= 40 else _LongInteger(digits)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
