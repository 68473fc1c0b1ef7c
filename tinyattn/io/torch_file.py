"""torch's own checkpoint format (``torch.save`` / ``torch.load``), with torch's security model.

The file is a zip archive (members stored uncompressed) holding ``archive/data.pkl``, a pickle
(protocol 2) of the object, and one member ``archive/data/<key>`` per tensor storage (raw
little-endian bytes). In the pickle a tensor is ``torch._utils._rebuild_tensor_v2(storage,
offset, size, stride, requires_grad, hooks)``, a parameter ``_rebuild_parameter(tensor,
requires_grad, hooks)``, and each storage a persistent id ``("storage", torch.FloatStorage,
key, "cpu", numel)``. tinyattn writes exactly that, so real PyTorch reads tinyattn's files,
and reads it, so tinyattn reads real PyTorch's.

Loading follows torch (2.6 and later):

- ``weights_only=True`` (the default) rebuilds tensors, parameters, dicts, OrderedDicts,
  lists, tuples, sets, numbers, strings, bytes, torch dtypes, ``torch.Size`` and
  ``torch.device``, and nothing else: any other class or function the file names is refused
  with torch's ``UnpicklingError`` text, before it is imported, unless allow-listed with
  ``add_safe_globals([Config])`` or ``with safe_globals([Config]):``. A hostile file cannot
  run code: the only callables a pickle can reach are the ones in that list.
- ``weights_only=False`` unpickles anything, like ``pickle.load``: it can run any code the
  file names. Use it only for files from a source you trust.

Whatever ``weights_only`` says, the storages are checked as untrusted input: each must be a
stored (uncompressed) member of the declared size, and every tensor's size, stride and offset
must lie inside its storage.
"""
from __future__ import annotations

import codecs
import collections
import contextlib
import io
import math
import os
import pickle
import zipfile
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .. import backend, precision, printing
from ..atomic import atomic_write
from ..nn import Parameter, UninitializedBuffer, UninitializedParameter
from ..tensor import Tensor

__all__ = ["save_torch", "load_torch", "is_torch_file", "add_safe_globals",
           "get_safe_globals", "clear_safe_globals", "safe_globals", "UnpicklingError",
           "DEFAULT_PROTOCOL"]

UnpicklingError = pickle.UnpicklingError
DEFAULT_PROTOCOL = 2

_STORAGES = {"FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
             "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
             "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8",
             "BoolStorage": "bool", "ComplexFloatStorage": "complex64",
             "ComplexDoubleStorage": "complex128"}
_STORAGE_OF = {dtype: name for name, dtype in _STORAGES.items()}
_TORCH_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64",
                 "double": "float64", "float16": "float16", "half": "float16",
                 "bfloat16": "bfloat16", "int64": "int64", "long": "int64", "int32": "int32",
                 "int": "int32", "int16": "int16", "short": "int16", "int8": "int8",
                 "uint8": "uint8", "bool": "bool", "complex64": "complex64",
                 "complex128": "complex128"}

_WEIGHTS_ONLY_TEXT = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, "
    "do those steps only if you trust the source of the checkpoint. \n\t(1) In PyTorch 2.6, "
    "we changed the default value of the `weights_only` argument in `torch.load` from `False` "
    "to `True`. Re-running `torch.load` with `weights_only` set to `False` will likely "
    "succeed, but it can result in arbitrary code execution. Do it only if you got the file "
    "from a trusted source.\n\t(2) Alternatively, to load with `weights_only=True` please "
    "check the recommended steps in the following error message.\n\tWeightsUnpickler error: "
    "{why}\n\nCheck the documentation of torch.load to learn more about types accepted by "
    "default with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")


# ------------------------------------------------------------------ the allow-list
_safe: List[Tuple[Any, str]] = []        # (object, "module.qualname") added by the user


def _full_name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def add_safe_globals(safe_globals: List[Any]) -> None:
    """``torch.serialization.add_safe_globals``: classes and functions ``weights_only=True``
    loading may rebuild. An item is the object, or ``(object, "module.name")`` to allow it
    under the name a file uses."""
    for item in safe_globals:
        obj, name = item if isinstance(item, tuple) else (item, _full_name(item))
        if not isinstance(name, str):
            raise TypeError(f"add_safe_globals: expected (object, str), got {item!r}")
        _safe.append((obj, name))


def get_safe_globals() -> List[Any]:
    return [obj if name == _full_name(obj) else (obj, name) for obj, name in _safe]


def clear_safe_globals() -> None:
    _safe.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: List[Any]) -> Iterator[None]:  # noqa: F811 - torch's name
    """``with torch.serialization.safe_globals([Config]):`` allow-lists for the block only."""
    kept = list(_safe)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _safe[:] = kept


# ------------------------------------------------------------------ saving
class _TorchName:
    """A name in torch's namespace written into the pickle as a GLOBAL (torch need not be
    installed to write it)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:     # pickle asks a reduce function to be callable
        raise TypeError(f"{self.module}.{self.name} is a name written into a file, not code")


_NAMES: Dict[Tuple[str, str], _TorchName] = {}


def _torch_name(module: str, name: str) -> _TorchName:
    return _NAMES.setdefault((module, name), _TorchName(module, name))


class _Storage:
    def __init__(self, key: str, dtype: str, data: np.ndarray) -> None:
        self.key, self.dtype, self.data = key, dtype, data


class _Pickler(pickle._Pickler):       # the Python pickler: it lets GLOBALs be written by hand
    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file: Any, storages: List[_Storage]) -> None:
        super().__init__(file, protocol=DEFAULT_PROTOCOL)
        self.storages = storages

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _Storage):
            return ("storage", _torch_name("torch", _STORAGE_OF[obj.dtype]), obj.key, "cpu",
                    int(obj.data.size))
        return None

    def save(self, obj: Any, save_persistent_id: bool = True) -> None:
        # run-torch's dtype (a str subclass named dtype holding "float16") is written as
        # torch writes its dtypes, the GLOBAL torch.float16, which weights_only loading allows
        if isinstance(obj, str) and type(obj) is not str and type(obj).__name__ == "dtype":
            name = str.__str__(obj)
            if name in _TORCH_DTYPES:
                obj = _torch_name("torch", name)
        super().save(obj, save_persistent_id)

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, printing.Size):          # torch.Size([2, 3]), as torch writes it
            return (_torch_name("torch", "Size"), (tuple(obj),))
        if isinstance(obj, str) and type(obj) is not str and type(obj).__name__ == "device" \
                and hasattr(obj, "index"):          # run-torch's torch.device("cpu")
            return (_torch_name("torch", "device"), (str(obj),))
        if isinstance(obj, (UninitializedParameter, UninitializedBuffer)):   # as torch's:
            return (_torch_name("torch.nn.parameter", type(obj).__name__),    # no data yet
                    (bool(obj.requires_grad),))
        if isinstance(obj, Parameter):
            plain = Tensor._wrap(obj._data)
            return (_torch_name("torch._utils", "_rebuild_parameter"),
                    (plain, bool(obj.requires_grad), collections.OrderedDict()))
        if isinstance(obj, Tensor):
            dtype = np.dtype(obj._data.dtype).name
            if dtype not in _STORAGE_OF:
                raise pickle.PicklingError(f"save: a tensor of dtype {dtype} has no torch "
                                           f"storage type")
            shared = self._shared_storage(obj._data, dtype)
            if shared is not None:      # a view: its base's memory, its offset and strides
                storage, offset, strides = shared
                return (_torch_name("torch._utils", "_rebuild_tensor_v2"),
                        (storage, offset, tuple(obj._data.shape), strides,
                         bool(obj.requires_grad), collections.OrderedDict()))
            data = backend.to_host(obj._data)
            # np.ascontiguousarray makes a 0-d array 1-d: reshape back, or torch.load would
            # read a scalar tensor (an optimizer's step) as shape (1,)
            host = np.ascontiguousarray(data).reshape(np.shape(data))
            storage = _Storage(str(len(self.storages)), dtype, host.reshape(-1))
            self.storages.append(storage)
            strides = tuple(s // host.itemsize for s in host.strides) if host.size else \
                tuple(int(np.prod(host.shape[i + 1:])) for i in range(host.ndim))
            return (_torch_name("torch._utils", "_rebuild_tensor_v2"),
                    (storage, 0, tuple(host.shape), strides, bool(obj.requires_grad),
                     collections.OrderedDict()))
        return NotImplemented


def _shared_storage(self: _Pickler, data: Any, dtype: str) -> Optional[Tuple[_Storage, int,
                                                                           Tuple[int, ...]]]:
    """As torch saves a tensor: the whole memory it views (its NumPy base, written once per
    file and shared by every tensor viewing it, so a tensor and its view load sharing memory
    again) with its element offset and strides (a transposed tensor keeps its strides).
    None where the array is not a plain host NumPy view of a contiguous base of its dtype
    (then the tensor is written as a contiguous copy of its own)."""
    if not isinstance(data, np.ndarray) or not data.size:
        return None
    root = data
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root.dtype != data.dtype or not root.flags.c_contiguous:
        return None
    item = data.itemsize
    if any(step < 0 or step % item for step in data.strides):
        return None
    start = data.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    if start < 0 or start % item:
        return None
    if not hasattr(self, "_roots"):
        self._roots = {}
    entry = self._roots.get(id(root))
    if entry is None or entry[0] is not root:
        storage = _Storage(str(len(self.storages)), dtype, root.reshape(-1))
        self.storages.append(storage)
        entry = self._roots[id(root)] = (root, storage)
    return entry[1], start // item, tuple(step // item for step in data.strides)


_Pickler._shared_storage = _shared_storage


def _write_global(self: _Pickler, obj: _TorchName) -> None:
    self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode("utf-8"))
    self.memoize(obj)


_Pickler.dispatch[_TorchName] = _write_global


def _write_archive(f: Any, obj: Any) -> None:
    storages: List[_Storage] = []
    buffer = io.BytesIO()
    _Pickler(buffer, storages).dump(obj)
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", buffer.getvalue())
        archive.writestr("archive/.format_version", "1")
        archive.writestr("archive/.storage_alignment", "64")
        archive.writestr("archive/byteorder", "little")
        for storage in storages:
            data = storage.data
            if storage.dtype == "bfloat16":
                data = data.view(np.uint16)
            archive.writestr(f"archive/data/{storage.key}",
                             data.astype(data.dtype.newbyteorder("<")).tobytes())
        archive.writestr("archive/version", "3\n")


def save_torch(obj: Any, f: Any) -> None:
    """``torch.save(obj, f)``: pickle ``obj`` in torch's zip format (module docstring), to a
    path (written atomically) or into a binary file object."""
    if hasattr(f, "write"):
        _write_archive(f, obj)
        return
    with atomic_write(os.fspath(f)) as out:
        _write_archive(out, obj)


# ------------------------------------------------------------------ loading
def is_torch_file(head: bytes, names: List[str]) -> bool:
    """Whether a zip archive's member names are torch's (one folder with a data.pkl)."""
    return head.startswith(b"PK") and any(n.endswith("/data.pkl") or n == "data.pkl"
                                          for n in names)


def _rebuild_tensor_v2(storage: Any, storage_offset: Any, size: Any, stride: Any,
                       requires_grad: Any, backward_hooks: Any, metadata: Any = None) -> Tensor:
    """A tensor viewing ``storage`` (checked: every element it reaches lies inside it)."""
    if not isinstance(storage, np.ndarray):
        raise UnpicklingError(f"load: a tensor's storage is a {type(storage).__name__}")
    shape, strides = _ints(size, "size"), _ints(stride, "stride")
    offset = _ints((storage_offset,), "storage offset")[0]
    if len(shape) != len(strides):
        raise UnpicklingError(f"load: a tensor has size {shape} but stride {strides}")
    count = math.prod(shape)
    last = offset + sum((n - 1) * s for n, s in zip(shape, strides)) if count else offset - 1
    if count and last >= storage.size or offset > storage.size:
        raise UnpicklingError(f"load: a tensor of size {shape}, stride {strides}, offset "
                              f"{offset} reaches past its storage of {storage.size} elements; "
                              f"the file is damaged")
    if count:
        # a view of the storage, as torch's: tensors saved sharing memory load sharing it, and
        # a tensor keeps its strides (overlapping ones, an expanded tensor, stay read-only)
        overlapping = any(s == 0 and n > 1 for n, s in zip(shape, strides))
        data = np.lib.stride_tricks.as_strided(
            storage[offset:], shape=shape, strides=[s * storage.itemsize for s in strides],
            writeable=not overlapping and storage.flags.writeable)
    else:
        data = np.zeros(shape, dtype=storage.dtype)
    out = Tensor._wrap(data)
    if requires_grad and precision.is_floating(out.dtype):
        out.requires_grad_(True)
    return out


def _ints(values: Any, what: str) -> Tuple[int, ...]:
    if not isinstance(values, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise UnpicklingError(f"load: a tensor's {what} is {str(values)[:60]}, not "
                              f"non-negative integers; the file is damaged")
    return tuple(values)


def _rebuild_parameter(data: Any, requires_grad: Any, backward_hooks: Any,
                       state: Any = None) -> Parameter:
    if not isinstance(data, Tensor):
        raise UnpicklingError(f"load: a parameter holds a {type(data).__name__}")
    return Parameter(data.detach(), requires_grad=bool(requires_grad))


def _rebuild_from_type_v2(func: Any, new_type: Any, args: Any, state: Any) -> Any:
    if func not in (_rebuild_tensor_v2, _rebuild_parameter):
        raise UnpicklingError("load: _rebuild_from_type_v2 of something not a tensor")
    return func(*args)


def _encode(text: Any, encoding: str = "utf-8") -> bytes:
    """``_codecs.encode``, which protocol 2 uses for bytes: text codecs only."""
    if not isinstance(text, str) or codecs.lookup(encoding).name not in (
            "iso8859-1", "latin-1", "utf-8", "ascii"):
        raise UnpicklingError(f"load: _codecs.encode({type(text).__name__}, {encoding!r}) is "
                              f"not how a checkpoint stores bytes")
    return text.encode(encoding)


# What a loaded torch.float16 / torch.device("cpu") becomes: plain strings (tinyattn's own
# dtypes and devices); the torch runner registers its dtype and device classes here
# (torch_shim/shim_names.py), so that under run-torch they load back as torch's objects.
LOADED_TYPES: Dict[str, Callable[[str], Any]] = {"dtype": str, "device": str}


def _device(kind: Any, index: Any = None) -> Any:
    return LOADED_TYPES["device"](str(kind) if index is None else f"{kind}:{int(index)}")


_LAZY: Dict[str, Any] = {"torch.nn.parameter.UninitializedParameter": UninitializedParameter,
                         "torch.nn.parameter.UninitializedBuffer": UninitializedBuffer}
_ALLOWED: Dict[str, Any] = {
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    "torch.nn.parameter.Parameter": Parameter,
    "torch.Size": printing.Size, "torch.device": _device,
    "collections.OrderedDict": collections.OrderedDict,
    "_codecs.encode": _encode,
    "builtins.set": set, "__builtin__.set": set, "builtins.frozenset": frozenset,
    "__builtin__.frozenset": frozenset, "builtins.complex": complex,
    "__builtin__.complex": complex, "builtins.bytearray": bytearray,
    "__builtin__.bytearray": bytearray,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, storage: Callable[[Any], np.ndarray],
                 weights_only: bool) -> None:
        super().__init__(file)
        self.storage, self.weights_only = storage, weights_only

    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        if module == "torch" and name in _STORAGES:
            return _STORAGES[name]
        if module == "torch" and name in _TORCH_DTYPES:
            return LOADED_TYPES["dtype"](_TORCH_DTYPES[name])
        if full in _ALLOWED:
            return _ALLOWED[full]
        for obj, safe_name in reversed(_safe):
            if safe_name == full:
                return obj
        if not self.weights_only and full in _LAZY:          # trusted file: as torch, which
            return _LAZY[full]                                # refuses them in weights_only
        if not self.weights_only:
            return super().find_class(module, name)        # trusted file: anything
        if full.startswith("torch.nn.modules."):
            raise UnpicklingError(
                f"load: this file holds a whole PyTorch module ({full}) pickled by "
                f"torch.save(model); tinyattn cannot rebuild PyTorch's module objects, even "
                f"allow-listed. In PyTorch save its weights, torch.save(model.state_dict(), "
                f"path), then build the model here and call "
                f"model.load_state_dict(torch.load(path)).")
        raise UnpicklingError(_WEIGHTS_ONLY_TEXT.format(
            why=f"Unsupported global: GLOBAL {full} was not an allowed global by default. "
                f"Please use `torch.serialization.add_safe_globals([{full}])` or the "
                f"`torch.serialization.safe_globals([{full}])` context manager to allowlist "
                f"this global if you trust this class/function."))

    def persistent_load(self, pid: Any) -> Any:
        if not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage":
            raise UnpicklingError(f"load: unknown persistent id {str(pid)[:60]}; the file is "
                                  f"damaged or not a torch checkpoint")
        return self.storage(pid)


def _read_storage(where: str, archive: zipfile.ZipFile, prefix: str, pid: Tuple[Any, ...],
                  cache: Dict[str, np.ndarray]) -> np.ndarray:
    _, dtype, key, _location, numel = pid
    if not isinstance(dtype, str) or dtype not in _STORAGE_OF or not isinstance(key, str) \
            or not isinstance(numel, int) or numel < 0:
        raise UnpicklingError(f"load: storage {str(pid)[:80]} of {where} is malformed")
    if key in cache:
        return cache[key]
    name = f"{prefix}data/{key}"
    try:
        info = archive.getinfo(name)
    except KeyError:
        raise UnpicklingError(f"load: {where} has no member {name!r} for storage {key}; the "
                              f"file is damaged") from None
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        raise UnpicklingError(f"load: member {name!r} of {where} is compressed or encrypted; "
                              f"torch.save stores storages uncompressed")
    dt = np.dtype(np.uint16 if dtype == "bfloat16" else dtype).newbyteorder("<")
    if info.file_size != numel * dt.itemsize:
        raise UnpicklingError(f"load: storage {key} of {where} declares {numel} elements of "
                              f"{dtype} but its member holds {info.file_size} bytes")
    raw = np.frombuffer(archive.read(info), dtype=dt).astype(dt.newbyteorder("="))
    cache[key] = raw.view(precision.BFLOAT16) if dtype == "bfloat16" else raw
    return cache[key]


def load_torch(f: Any, weights_only: bool = True, where: str = "the file") -> Any:
    """``torch.load`` of a file in torch's zip format (module docstring); tensors come back
    as tinyattn Tensors on the CPU."""
    with zipfile.ZipFile(f) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") or n == "data.pkl"]
        if len(pickles) != 1:
            raise UnpicklingError(f"load: {where} holds {len(pickles)} data.pkl members; a "
                                  f"torch checkpoint holds one")
        prefix = pickles[0][:-len("data.pkl")]
        info = archive.getinfo(pickles[0])
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > 64 * info.compress_size:
            raise UnpicklingError(f"load: {where}'s data.pkl expands {info.file_size} bytes "
                                  f"from {info.compress_size}; refused")
        byteorder = prefix + "byteorder"
        if byteorder in names and archive.read(byteorder).strip() not in (b"little", b""):
            raise UnpicklingError(f"load: {where} was written big-endian; tinyattn reads "
                                  f"little-endian checkpoints")
        cache: Dict[str, np.ndarray] = {}
        unpickler = _Unpickler(io.BytesIO(archive.read(info)),
                               lambda pid: _read_storage(where, archive, prefix, pid, cache),
                               weights_only)
        return unpickler.load()


def describe_legacy(head: bytes) -> Optional[str]:
    """A reason to refuse a file that is a raw pickle (torch's format before 1.6)."""
    if head[:1] == b"\x80":
        return ("it is a bare pickle (torch's legacy format, before 1.6); re-save it with a "
                "current torch.save, which writes the zip format tinyattn reads")
    return None
