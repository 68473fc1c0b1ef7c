"""``save(obj, path)`` and ``load(path)``: checkpoints as NumPy ``.npz`` files (docs/nn.md#saving).

``obj`` is a state dict, or any nesting of dicts, lists and tuples whose leaves are arrays
(NumPy, CuPy, ``Tensor``), NumPy scalars, Python numbers, strings, booleans or None. So one
checkpoint can hold ``{"model": model.state_dict(), "optimizer": ..., "step": 1200,
"rng": tinyattn.get_rng_state()}``.

File layout: each array is one ``.npy`` member, named by its path of keys joined with "/"
(``model/blocks.0.attn.q_proj.weight``), so ``numpy.load`` can read the arrays too. The
member ``__tinyattn__`` holds a JSON description of the nesting and every non-array leaf;
``load`` rebuilds the object from it. Arrays come back as host NumPy arrays (move them with
``load_state_dict`` or ``tensor(..., device=...)``). No pickle is used, so loading a file
never runs code. (Objects that are not data, and every ``torch.save`` under the torch runner,
are written in torch's own pickle format instead: ``tinyattn/io/torch_file.py``, which loads
with torch's ``weights_only`` allow-list.)

Saving writes a temporary file in the destination folder, flushes it to disk, then renames
it over ``path`` (``os.replace`` is atomic): an interrupted save leaves the old file intact.
The file is written exactly at ``path``; no ``.npz`` suffix is appended (atomic.py: a link
is written through, an existing file keeps its permissions, leftovers of a killed save are
cleaned up).

Loading treats the file as untrusted: before anything is read, every member's declared size
is checked against the file (so a 1 kB file cannot ask for terabytes), members must be stored
uncompressed (as ``save`` writes them: nothing is ever decompressed, so no zip bomb), dtypes
must be plain numbers, booleans or strings, and the JSON description may nest at most
``MAX_DEPTH`` levels. Anything else is a ``CheckpointError`` that says what is wrong.
"""
from __future__ import annotations

import io
import json
import math
import os
import re
import zipfile
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import backend, precision
from .atomic import atomic_write, remove_stale_temporaries
from .io.torch_file import describe_legacy, is_torch_file, load_torch, save_torch
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError", "atomic_write"]

_META = "__tinyattn__"
_FORMAT = "tinyattn-checkpoint"
_VERSION = 1
MAX_DEPTH = 64                  # dicts/lists/tuples inside each other that save and load accept
_MAX_JSON_DEPTH = 3 * MAX_DEPTH + 2   # a dict is 3 JSON levels ({"dict": [[k, v]]}), + 2 ends
_DTYPE_KINDS = "biufcSU"        # bool, ints, floats, complex, bytes, str: no objects
_HINT = "it is corrupt or was not written by tinyattn.save"


class CheckpointError(ValueError):
    """A file is not a tinyattn checkpoint, or is corrupt."""


def _is_array(value: Any) -> bool:
    return isinstance(value, (Tensor, np.ndarray, np.generic)) or (
        backend.device_of(value) != "cpu")


def _encode(obj: Any, path: str, arrays: Dict[str, np.ndarray], depth: int = 0) -> Any:
    """A JSON node describing ``obj``; arrays go into ``arrays`` under a unique name."""
    if depth >= MAX_DEPTH and isinstance(obj, (dict, list, tuple)):
        raise ValueError(f"save: the object nests more than {MAX_DEPTH} levels of dicts, "
                         f"lists and tuples (at {path}); load would refuse such a file, so "
                         f"save does too")
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise TypeError(f"save: key {key!r} at {path or '<root>'} is a "
                                f"{type(key).__name__}; only str and int keys are supported")
            child = f"{path}/{key}" if path else str(key)
            items.append([key, _encode(value, child, arrays, depth + 1)])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, f"{path}/{i}" if path else str(i), arrays, depth + 1)
                       for i, v in enumerate(obj)]}
    if not _is_array(obj) and (obj is None or isinstance(obj, (bool, int, float, str))):
        return {"value": obj}
    if getattr(obj, "_is_uninitialized", False):     # a lazy parameter: no array to write;
        raise TypeError("an uninitialized parameter")   # pickled in torch's format, as torch
    if _is_array(obj):
        data = obj._data if isinstance(obj, Tensor) else obj
        host = np.asarray(backend.to_host(data)) if not isinstance(data, np.generic) else data
        if host.dtype == object:
            raise TypeError(f"save: the array at {path} has dtype object, which needs pickle; "
                            f"convert it to a numeric array")
        name = path or "array"
        while name in arrays or name == _META:
            name += "_"
        node = {"array": name, "scalar": isinstance(data, np.generic)}
        if host.dtype == precision.BFLOAT16:    # .npy cannot name it: its bits as uint16
            host, node["bfloat16"] = np.asarray(host).view(np.uint16), True
        arrays[name] = np.asarray(host)
        return node
    where = path or "<root>"
    if callable(getattr(obj, "state_dict", None)):      # a module or an optimizer
        raise TypeError(f"save: cannot store the {type(obj).__name__} object itself at {where}: "
                        f"tinyattn files hold data, never pickled objects (torch.save(model) "
                        f"pickles the class). Save obj.state_dict() instead and load it into a "
                        f"new one with .load_state_dict(tinyattn.load(path))")
    raise TypeError(f"save: cannot store {type(obj).__name__} at {where}; supported "
                    f"leaves are arrays, Tensors, numbers, strings, booleans and None")


class _Damaged(Exception):
    """The JSON description does not have the shape ``_encode`` gives it."""


def _decode(node: Any, arrays: Dict[str, np.ndarray]) -> Any:
    if not isinstance(node, dict) or len(node) not in (1, 2, 3):
        raise _Damaged(f"a node is {type(node).__name__} {str(node)[:40]!r}")
    if "dict" in node:
        result = {}
        for pair in _listed(node["dict"]):
            if not isinstance(pair, list) or len(pair) != 2 or isinstance(pair[0], bool) \
                    or not isinstance(pair[0], (str, int)):
                raise _Damaged(f"a dict entry is {str(pair)[:40]!r}, not [key, value]")
            result[pair[0]] = _decode(pair[1], arrays)
        return result
    if "list" in node:
        return [_decode(v, arrays) for v in _listed(node["list"])]
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in _listed(node["tuple"]))
    if "array" in node:
        name = node["array"]
        if not isinstance(name, str) or name not in arrays:
            raise _Damaged(f"it names an array {str(name)[:40]!r} the file does not hold")
        array = arrays[name]
        if node.get("bfloat16"):
            if array.dtype != np.uint16:
                raise _Damaged(f"the bfloat16 array {name!r} is stored as {array.dtype}")
            array = array.view(precision.BFLOAT16)
        if node.get("scalar"):
            if array.ndim != 0:
                raise _Damaged(f"the scalar {name!r} has shape {array.shape}")
            return array[()]
        return array
    if "value" in node:
        value = node["value"]
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise _Damaged(f"a value is a {type(value).__name__}, not a number or string")
        return value
    raise _Damaged(f"a node has the keys {sorted(node)}")


def _listed(items: Any) -> list:
    if not isinstance(items, list):
        raise _Damaged(f"{type(items).__name__} {str(items)[:40]!r} where a list belongs")
    return items


def _write_npz(f: Any, members: List[Tuple[str, np.ndarray]]) -> None:
    """What np.savez writes (one .npy member per array), without its keyword arguments: a key
    named "file" or "allow_pickle" would collide with np.savez's own parameters."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
        for name, array in members:
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def save(obj: Any, path: Any) -> None:
    """Write ``obj`` to ``path`` atomically (temporary file in the same folder, then rename),
    or into ``path`` itself when it is a file object open for binary writing (``io.BytesIO``,
    ``open(name, "wb")``), as ``torch.save`` does.

    Data (the leaves the module docstring lists) is written as tinyattn's NumPy archive.
    Anything else (a whole module, a config dataclass) is pickled in torch's own format
    (``tinyattn.io.torch_file``), as ``torch.save`` pickles what it is given; loading such a
    file with the default ``weights_only=True`` then needs its classes allow-listed."""
    arrays: Dict[str, np.ndarray] = {}
    try:
        tree = _encode(obj, "", arrays)
    except TypeError:
        save_torch(obj, path)            # not plain data: pickled, as torch.save does
        return
    meta = json.dumps({"format": _FORMAT, "version": _VERSION, "tree": tree})
    if hasattr(path, "write"):
        _write_npz(path, [(_META, np.array(meta))] + list(arrays.items()))
        return
    with atomic_write(path) as f:
        _write_npz(f, [(_META, np.array(meta))] + list(arrays.items()))


def _human(size: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} bytes"


def _check_members(path: str, infos: List[zipfile.ZipInfo], file_size: int) -> None:
    """Refuse, before reading anything, a member that is compressed or encrypted, or members
    that together claim more bytes than the file has (overlapping or lying entries)."""
    total = 0
    for info in infos:
        if info.compress_type != zipfile.ZIP_STORED:
            raise CheckpointError(f"load: member {info.filename!r} of {path} is compressed; "
                                  f"tinyattn.save stores members uncompressed and load never "
                                  f"decompresses, so {_HINT}")
        if info.flag_bits & 0x1:
            raise CheckpointError(f"load: member {info.filename!r} of {path} is encrypted, so "
                                  f"{_HINT}")
        if info.file_size != info.compress_size:
            raise CheckpointError(f"load: member {info.filename!r} of {path} declares "
                                  f"{info.file_size} bytes but stores {info.compress_size}, "
                                  f"so {_HINT}")
        total += info.file_size
    if total > file_size:
        raise CheckpointError(f"load: the members of {path} declare {_human(total)} in all but "
                              f"the file has {_human(file_size)}, so {_HINT}")


def _read_member(path: str, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One .npy member, its header checked against the member's size before any data is
    read: memory is bounded by the file's own size."""
    where = f"member {info.filename!r} of {path}"
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise CheckpointError(f"load: {where} is .npy format {version}, which "
                                  f"tinyattn.save never writes, so {_HINT}")
        if dtype.hasobject or dtype.kind not in _DTYPE_KINDS or dtype.fields is not None \
                or dtype.subdtype is not None:
            raise CheckpointError(f"load: {where} has dtype {dtype}; a checkpoint holds only "
                                  f"numbers, booleans and strings, so {_HINT}")
        count = math.prod(shape)
        need, have = count * dtype.itemsize, info.file_size - member.tell()
        if need != have or (dtype.itemsize == 0 and count > 0):
            raise CheckpointError(f"load: {where} declares shape {shape} of {dtype} "
                                  f"({_human(need)}) but holds {_human(have)} of data, so "
                                  f"{_HINT}")
        buffer = bytearray(need)
        view, done = memoryview(buffer), 0
        while done < need:
            got = member.readinto(view[done:])
            if not got:
                raise CheckpointError(f"load: {where} ends early, so {_HINT}")
            done += got
        if member.read(1):      # also reaches the end, where zipfile checks the CRC
            raise CheckpointError(f"load: {where} has data after its array, so {_HINT}")
    if count == 0:
        return np.zeros(shape, dtype=dtype)
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def _json_depth(text: str) -> int:
    """How deeply ``text``'s brackets nest (strings skipped), without parsing it."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text).encode()
    codes = np.frombuffer(bare, dtype=np.uint8)
    steps = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) \
        - np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(steps).max(initial=0))


def _parse_meta(path: str, array: np.ndarray) -> Dict[str, Any]:
    if array.dtype.kind != "U" or array.ndim != 0:
        raise CheckpointError(f"load: the '{_META}' entry of {path} is {array.dtype} of shape "
                              f"{array.shape}, not a JSON string, so {_HINT}")
    text = str(array[()])
    depth = _json_depth(text)
    if depth > _MAX_JSON_DEPTH:
        raise CheckpointError(f"load: the header of {path} nests {depth} levels deep; a "
                              f"tinyattn checkpoint nests at most {_MAX_JSON_DEPTH}, so {_HINT}")
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"load: the header of {path} is not valid JSON "
                              f"({type(exc).__name__}: {str(exc)[:80]}), so {_HINT}") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise CheckpointError(f"load: {path} has no tinyattn checkpoint header, so {_HINT}")
    if meta.get("version") != _VERSION:
        raise CheckpointError(f"load: {path} is checkpoint format version "
                              f"{meta.get('version')}, this tinyattn reads version {_VERSION}")
    return meta


def _torch_format(name: str, data: bytes) -> bool:
    """Whether ``data`` is a torch checkpoint (zip with a data.pkl); a bare pickle (torch's
    pre-1.6 format) is refused with what to do."""
    legacy = describe_legacy(data[:2])
    if legacy:
        raise CheckpointError(f"load: cannot read {name}: {legacy}")
    if not data.startswith(b"PK"):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return is_torch_file(data[:2], archive.namelist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError):
        return False


def _read(path: str) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    if os.path.exists(path) and not os.path.isfile(path):   # a folder, a pipe, a device
        raise CheckpointError(f"load: {path} is not a regular file, so it is not a checkpoint")
    with open(path, "rb") as f:
        return _read_open(path, f, os.fstat(f.fileno()).st_size)


def _read_open(path: str, f: Any, file_size: int
               ) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """The checks and reads of ``_read`` on an open binary file (or an in-memory buffer)."""
    if f.read(6) == b"\x93NUMPY":
        raise CheckpointError(f"load: {path} holds a single .npy array, not a tinyattn "
                              f"checkpoint (.npz written by tinyattn.save); read it with "
                              f"numpy.load")
    f.seek(0)
    try:
        with zipfile.ZipFile(f) as archive:
            infos = archive.infolist()
            _check_members(path, infos, file_size)
            members = {info.filename[:-4] if info.filename.endswith(".npy")
                       else info.filename: info for info in infos}
            if _META not in members:
                raise CheckpointError(f"load: {path} is an .npz file without the "
                                      f"'{_META}' entry, so {_HINT}")
            meta = _parse_meta(path, _read_member(path, archive, members.pop(_META)))
            arrays = {name: _read_member(path, archive, info)
                      for name, info in members.items()}
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError,
            KeyError, RuntimeError, NotImplementedError, OverflowError) as exc:
        raise CheckpointError(f"load: cannot read {path}: {_HINT} "
                              f"({type(exc).__name__}: {str(exc)[:120]})") from None
    return meta, arrays


def load(path: Any, weights_only: Optional[bool] = None) -> Any:
    """Read a checkpoint written by ``save``; arrays come back as NumPy arrays. The file is
    checked as untrusted input (module docstring): a damaged or hostile file raises
    ``CheckpointError`` quickly, with memory bounded by the file's size.

    A file in torch's format (written by ``torch.save``, real or tinyattn's) is read as
    ``torch.load`` reads it (``tinyattn.io.torch_file``): tensors come back as Tensors, and
    ``weights_only`` (default True) refuses every class not allow-listed."""
    return load_with_format(path, weights_only)[0]


def load_with_format(path: Any, weights_only: Optional[bool] = None) -> Tuple[Any, bool]:
    """``load``, and whether the file was in torch's format. ``torch.load`` under
    ``run-torch`` turns the NumPy arrays of tinyattn's own archives into Tensors, and leaves
    the arrays a torch-format file pickled as they are (real torch returns those as arrays:
    PyTorch's ``time_sequence_prediction`` example saves and loads one)."""
    if hasattr(path, "read"):              # a file object: read from where it stands
        name = str(getattr(path, "name", "the file object"))
        data = path.read()
        if not isinstance(data, bytes):
            raise TypeError(f"load: {name} is open in text mode; open it with 'rb'")
    else:
        name = os.fspath(path)
        remove_stale_temporaries(os.path.dirname(os.path.abspath(name)))
        if os.path.exists(name) and not os.path.isfile(name):   # a folder, a pipe, a device
            raise CheckpointError(f"load: {name} is not a regular file, so it is not a "
                                  f"checkpoint")
        with open(name, "rb") as f:
            data = f.read()
    torch_file = _torch_format(name, data)
    if torch_file:
        return load_torch(io.BytesIO(data), weights_only=weights_only is not False,
                          where=name), True
    meta, arrays = _read_open(name, io.BytesIO(data), len(data))
    path = name
    try:
        return _decode(meta.get("tree"), arrays), False
    except (_Damaged, TypeError) as exc:
        raise CheckpointError(f"load: {path} has a damaged header ({exc}), so {_HINT}") \
            from None
