"""How the process that runs a learner's code hands its results back: plain data, no pickle.

One message is a record (JSON: dicts, lists, strings, numbers, booleans, None) plus named
NumPy arrays, laid out as safetensors lays out a file:

    8 bytes   little-endian length of the header
    header    JSON: {"record": ..., "arrays": {name: {"dtype", "shape", "offset", "nbytes"}}}
    payload   the arrays' raw bytes, back to back

``decode`` trusts nothing in a message: every dtype must be in a short list of numeric
types, every shape a list of non-negative ints whose size matches ``nbytes``, every offset
inside the payload. An array comes back as a fresh, writable, base-class ``np.ndarray``; no
object of the learner's is ever rebuilt (``pickle`` would run code on loading).

This module imports nothing but NumPy and the standard library: the child process loads it
by path, without importing tinyattn.
"""
from __future__ import annotations

import json
import math
import struct
from typing import Any, Dict, Tuple

import numpy as np

__all__ = ["encode", "decode", "TransportError", "ALLOWED_DTYPES", "MAX_MESSAGE_BYTES"]

# Numeric dtypes a result may hold; the checker decides afterwards which ones it accepts
# (float64 only, for gradients), so it can say "float32" instead of "unreadable".
ALLOWED_DTYPES = ("<f8", "<f4", "<f2", "<c16", "<c8", "<i8", "<i4", "<i2", "|i1", "<u8",
                  "<u4", "<u2", "|u1", "|b1")
MAX_MESSAGE_BYTES = 256 * 2**20


class TransportError(ValueError):
    """A message that is not a well-formed result (truncated, corrupted, or forged)."""


def encode(record: Any, arrays: Dict[str, np.ndarray]) -> bytes:
    """One message from a JSON-able ``record`` and numeric ``arrays``."""
    header: Dict[str, Any] = {"record": record, "arrays": {}}
    chunks, offset = [], 0
    for name, array in arrays.items():
        data = array.tobytes(order="C")
        header["arrays"][str(name)] = {"dtype": array.dtype.str, "shape": list(array.shape),
                                       "offset": offset, "nbytes": len(data)}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, allow_nan=True).encode("utf-8")
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def _shape(value: Any, name: str) -> Tuple[int, ...]:
    if not isinstance(value, list) or len(value) > 32:
        raise TransportError(f"array {name!r}: bad shape {value!r}")
    for n in value:
        if type(n) is not int or n < 0:
            raise TransportError(f"array {name!r}: bad shape {value!r}")
    return tuple(value)


def decode(message: bytes) -> Tuple[Any, Dict[str, np.ndarray]]:
    """(record, arrays) from a message, or ``TransportError`` saying what is wrong."""
    if not isinstance(message, (bytes, bytearray)) or len(message) < 8:
        raise TransportError("the message is empty or truncated")
    if len(message) > MAX_MESSAGE_BYTES:
        raise TransportError(f"the message is {len(message):,} bytes, more than the "
                             f"{MAX_MESSAGE_BYTES:,} a result may take")
    (length,) = struct.unpack("<Q", message[:8])
    if length > len(message) - 8:
        raise TransportError("the header is longer than the message")
    try:
        header = json.loads(message[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise TransportError(f"the header is not JSON ({error})") from None
    if not isinstance(header, dict) or set(header) != {"record", "arrays"} \
            or not isinstance(header["arrays"], dict):
        raise TransportError("the header does not have the fields 'record' and 'arrays'")
    payload = memoryview(message)[8 + length:]
    arrays = {}
    for name, meta in header["arrays"].items():
        if not isinstance(meta, dict) or set(meta) != {"dtype", "shape", "offset", "nbytes"}:
            raise TransportError(f"array {name!r}: bad description {meta!r}")
        if meta["dtype"] not in ALLOWED_DTYPES:
            raise TransportError(f"array {name!r}: dtype {meta['dtype']!r} is not numeric")
        shape = _shape(meta["shape"], name)
        dtype = np.dtype(meta["dtype"])
        offset, nbytes = meta["offset"], meta["nbytes"]
        if type(offset) is not int or type(nbytes) is not int or offset < 0 \
                or nbytes != math.prod(shape) * dtype.itemsize \
                or offset + nbytes > len(payload):
            raise TransportError(f"array {name!r}: size or offset does not match its shape")
        raw = payload[offset:offset + nbytes]
        arrays[name] = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return header["record"], arrays
