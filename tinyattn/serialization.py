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
never runs code.

Saving writes a temporary file in the destination folder, flushes it to disk, then renames
it over ``path`` (``os.replace`` is atomic): an interrupted save leaves the old file intact.
The file is written exactly at ``path``; no ``.npz`` suffix is appended.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from typing import IO, Any, Dict, Iterator, List, Tuple

import numpy as np

from . import backend
from .tensor import Tensor

__all__ = ["save", "load", "CheckpointError", "atomic_write"]

_META = "__tinyattn__"
_FORMAT = "tinyattn-checkpoint"
_VERSION = 1


class CheckpointError(ValueError):
    """A file is not a tinyattn checkpoint, or is corrupt."""


def _is_array(value: Any) -> bool:
    return isinstance(value, (Tensor, np.ndarray, np.generic)) or (
        backend.device_of(value) != "cpu")


def _encode(obj: Any, path: str, arrays: Dict[str, np.ndarray]) -> Any:
    """A JSON node describing ``obj``; arrays go into ``arrays`` under a unique name."""
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise TypeError(f"save: key {key!r} at {path or '<root>'} is a "
                                f"{type(key).__name__}; only str and int keys are supported")
            child = f"{path}/{key}" if path else str(key)
            items.append([key, _encode(value, child, arrays)])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, f"{path}/{i}" if path else str(i), arrays)
                       for i, v in enumerate(obj)]}
    if not _is_array(obj) and (obj is None or isinstance(obj, (bool, int, float, str))):
        return {"value": obj}
    if _is_array(obj):
        data = obj._data if isinstance(obj, Tensor) else obj
        host = np.asarray(backend.to_host(data)) if not isinstance(data, np.generic) else data
        if host.dtype == object:
            raise TypeError(f"save: the array at {path} has dtype object, which needs pickle; "
                            f"convert it to a numeric array")
        name = path or "array"
        while name in arrays or name == _META:
            name += "_"
        arrays[name] = np.asarray(host)
        return {"array": name, "scalar": isinstance(data, np.generic)}
    raise TypeError(f"save: cannot store {type(obj).__name__} at {path or '<root>'}; supported "
                    f"leaves are arrays, Tensors, numbers, strings, booleans and None")


def _decode(node: Any, arrays: Any) -> Any:
    if "dict" in node:
        return {key: _decode(value, arrays) for key, value in node["dict"]}
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    if "array" in node:
        array = arrays[node["array"]]
        return array[()] if node.get("scalar") else array
    return node["value"]


def _write_npz(f: Any, members: List[Tuple[str, np.ndarray]]) -> None:
    """What np.savez writes (one .npy member per array), without its keyword arguments: a key
    named "file" or "allow_pickle" would collide with np.savez's own parameters."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
        for name, array in members:
            with archive.open(name + ".npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path`` for writing; when the block ends without an
    error, flush it to disk and rename it over ``path`` (``os.replace`` is atomic). An
    interruption (Ctrl-C, a crash, a full disk) leaves the old file intact and no temporary.
    Every file tinyattn writes (checkpoints, metrics, plots, reports) goes through here."""
    folder = os.path.dirname(os.path.abspath(path))
    handle, tmp_path = tempfile.mkstemp(prefix=".tmp-", suffix=os.path.splitext(path)[1],
                                        dir=folder)
    try:
        with os.fdopen(handle, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        raise


def save(obj: Any, path: str) -> None:
    """Write ``obj`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    arrays: Dict[str, np.ndarray] = {}
    tree = _encode(obj, "", arrays)
    meta = json.dumps({"format": _FORMAT, "version": _VERSION, "tree": tree})
    with atomic_write(path) as f:
        _write_npz(f, [(_META, np.array(meta))] + list(arrays.items()))


def _read(path: str) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    hint = "it is corrupt or was not written by tinyattn.save"
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not isinstance(archive, np.lib.npyio.NpzFile):
                raise CheckpointError(f"load: {path} holds a single .npy array, not a tinyattn "
                                      f"checkpoint (.npz written by tinyattn.save)")
            names = list(archive.files)
            if _META not in names:
                raise CheckpointError(f"load: {path} is an .npz file without the "
                                      f"'{_META}' entry, so {hint}")
            meta = json.loads(str(archive[_META]))
            arrays = {name: archive[name] for name in names if name != _META}
    except CheckpointError:
        raise
    except FileNotFoundError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        raise CheckpointError(f"load: cannot read {path}: {hint} "
                              f"({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise CheckpointError(f"load: {path} has no tinyattn checkpoint header, so {hint}")
    if meta.get("version") != _VERSION:
        raise CheckpointError(f"load: {path} is checkpoint format version "
                              f"{meta.get('version')}, this tinyattn reads version {_VERSION}")
    return meta, arrays


def load(path: str) -> Any:
    """Read a checkpoint written by ``save``; arrays come back as NumPy arrays."""
    meta, arrays = _read(path)
    try:
        return _decode(meta["tree"], arrays)
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"load: {path} has a damaged header ({type(exc).__name__}: "
                              f"{exc}); it is corrupt or was not written by tinyattn.save") \
            from None
