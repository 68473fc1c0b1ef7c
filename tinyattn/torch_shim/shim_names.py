"""torch names that have no tinyattn function of the same name, given torch's meaning here.

Each is small and exact: ``torch.device`` is a ``str`` (so every tinyattn call that takes a
device name takes it), ``torch.Size`` a tuple, ``torch.cuda.is_available()`` asks tinyattn's
backend, and a setting tinyattn cannot honour is refused with a way around it, never ignored.
"""
from __future__ import annotations

import functools
import math
import os
import sys
import warnings
from typing import Any, Optional

import numpy as np

from .. import amp, backend, factories, functional, printing, serialization
from .. import blas_threads, kernels
from ..ops import dtype_rules
from ..io import torch_file
from .. import precision
from .. import profiler as _profiler
from ..precision import is_floating
from ..gradcheck import gradcheck as _gradcheck
from ..autograd import enable_grad, no_grad
from ..factories import zeros
from ..tensor import Tensor, tensor
from .missing import MissingTorchAttribute

__all__ = ["device", "dtype", "Size", "TORCH_SHIM_NAMES", "AUTOGRAD_SHIM_NAMES", "CUDA_SHIM_NAMES",
           "ACCELERATOR_SHIM_NAMES", "MPS_SHIM_NAMES", "CUDNN_SHIM_NAMES",
           "AUTOGRAD_PROFILER_SHIM_NAMES", "BACKENDS_CUDA_SHIM_NAMES"]


class device(str):  # noqa: N801 - PyTorch's name
    """``torch.device("cpu")``, ``torch.device("cuda", 0)``, ``torch.device("cuda:0")``.

    A ``str`` holding the device string, with torch's ``.type`` and ``.index``: tinyattn
    accepts it wherever it accepts "cpu" or "cuda" (``.to(device)``, ``device=``)."""

    type: str
    index: Optional[int]

    def __new__(cls, type: Any, index: Optional[int] = None) -> "device":  # noqa: A002
        if isinstance(type, device) and index is None:
            return type
        text = str(type)
        kind, _, number = text.partition(":")
        if index is not None:
            if number:
                raise RuntimeError(f"device: type {text!r} already names an index; pass "
                                   f"torch.device({kind!r}, {index}) or {text!r} alone")
            number = str(index)
        if not kind or (number and not number.isdigit()):
            raise RuntimeError(f"Invalid device string: {text!r} (expected 'cpu', 'cuda' or "
                               f"'cuda:0')")
        self = super().__new__(cls, f"{kind}:{number}" if number else kind)
        self.type, self.index = kind, int(number) if number else None
        return self

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type={self.type!r})"
        return f"device(type={self.type!r}, index={self.index})"

    def __reduce__(self) -> Any:
        return device, (str(self),)

    def __enter__(self) -> "device":
        """``with torch.device("cuda"):`` factories without ``device=`` make tensors here."""
        self.__dict__.setdefault("_previous", []).append(factories.get_default_device())
        factories.set_default_device(str(self))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        factories.set_default_device(self.__dict__["_previous"].pop())


class dtype(str):  # noqa: N801 - PyTorch's name
    """``torch.float32`` and friends: the dtype's name (a ``str``, which every tinyattn
    function takes as a dtype) with torch's attributes, printed as torch prints it. Under
    run-torch a tensor's ``.dtype`` is one of these too; it also answers NumPy's dtype
    attributes (``kind``, ``itemsize``, ``type``, ``name``) and compares equal to NumPy's
    dtype of the same name, so tinyattn's own code reads it as NumPy's."""

    def _numpy(self) -> np.dtype:
        return _numpy_dtype(str.__str__(self))

    @property
    def is_floating_point(self) -> bool:
        return is_floating(self._numpy())

    @property
    def is_complex(self) -> bool:
        return self._numpy().kind == "c"

    @property
    def is_signed(self) -> bool:
        return self._numpy().kind in "fic" or is_floating(self._numpy())

    def to_real(self) -> "dtype":
        """``torch.complex64.to_real()``: the dtype of the real parts (a real dtype: itself)."""
        parts = {"complex64": "float32", "complex128": "float64"}
        return torch_dtype(parts.get(str.__str__(self), str.__str__(self)))

    def to_complex(self) -> "dtype":
        """``torch.float32.to_complex()``: the complex dtype with these real parts."""
        name = str.__str__(self)
        if self._numpy().kind == "c":
            return self
        pairs = {"float32": "complex64", "float64": "complex128"}
        if name not in pairs:
            raise RuntimeError(f"to_complex: tinyattn has complex64 and complex128 only "
                               f"(torch.{name} has no complex partner here; float16's "
                               f"would be torch's complex32)")
        return torch_dtype(pairs[name])

    @property
    def itemsize(self) -> int:
        return self._numpy().itemsize

    @property
    def kind(self) -> str:
        return self._numpy().kind

    @property
    def name(self) -> str:
        return str.__str__(self)

    @property
    def char(self) -> str:
        return self._numpy().char

    @property
    def type(self) -> Any:
        return self._numpy().type

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            other = other[len("torch."):] if other.startswith("torch.") else other
        try:
            return self._numpy() == _numpy_dtype(other)
        except TypeError:
            return False

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:        # as its name: tables keyed by dtype names find it
        return str.__hash__(self)

    def __repr__(self) -> str:
        return f"torch.{str.__str__(self)}"

    __str__ = __repr__


def _numpy_dtype(value: Any) -> np.dtype:
    """np.dtype(value), with "bfloat16" as ml-dtypes' (imported on first use: NumPy knows
    the name only after that)."""
    return precision.BFLOAT16 if isinstance(value, str) and value == "bfloat16" else \
        np.dtype(value)


_DTYPES = {name: dtype(value) for name, value in [
    ("float16", "float16"), ("half", "float16"), ("float32", "float32"), ("float", "float32"),
    ("float64", "float64"), ("double", "float64"), ("int8", "int8"), ("int16", "int16"),
    ("short", "int16"), ("int32", "int32"), ("int", "int32"), ("int64", "int64"),
    ("long", "int64"), ("uint8", "uint8"), ("bool", "bool"), ("bfloat16", "bfloat16"),
    ("complex64", "complex64"), ("cfloat", "complex64"), ("complex128", "complex128"),
    ("cdouble", "complex128")]}


Size = printing.Size     # torch.Size: the class of every tensor's .shape


def torch_dtype(numpy_dtype: Any) -> dtype:
    """The torch dtype object for a NumPy dtype (what ``x.dtype`` gives under run-torch)."""
    name = _numpy_dtype(numpy_dtype).name
    found = _DTYPES.get(name)
    return found if found is not None else dtype(name)


def get_default_dtype() -> dtype:
    """torch.get_default_dtype(): tinyattn's one default float dtype (precision.py), as a
    torch dtype object (it prints ``torch.float64``)."""
    return torch_dtype(precision.get_default_dtype())


def set_default_dtype(dtype: Any) -> None:
    """torch.set_default_dtype: float16, bfloat16, float32 or float64 (torch dtype objects
    only: a name string is torch's TypeError too); precision.set_default_dtype does it."""
    if not isinstance(dtype, globals()["dtype"]):
        raise TypeError("invalid dtype object: only floating-point types are supported as the "
                        "default type")
    precision.set_default_dtype(str.__str__(dtype))


_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def _threadpoolctl() -> Any:
    """The optional threadpoolctl module (not a tinyattn dependency), or None."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def set_num_threads(n: int) -> None:
    """``torch.set_num_threads(n)``. tinyattn has no thread pool of its own: its threads are
    those of the BLAS libraries (matrix products), whose count is set to ``n``: through
    threadpoolctl when it is installed (every BLAS in the process: NumPy's and SciPy's), else
    NumPy's through ctypes (tinyattn/blas_threads.py); which has the effect torch's call has.
    Where neither finds a BLAS, one line on stderr says that the call changes nothing and
    how to set the threads."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RuntimeError(f"torch.set_num_threads: the number of threads must be a positive "
                           f"integer, got {n!r}")
    module = _threadpoolctl()
    if module is not None:              # every BLAS in the process (NumPy's and SciPy's)
        module.threadpool_limits(limits=n)
        return
    if blas_threads.set_threads(n):     # else NumPy's, through ctypes
        return
    print(f"tinyattn: torch.set_num_threads({n}) has no effect here (NumPy's BLAS fixes its "
          f"threads when it loads, and threadpoolctl is not installed); run the script with "
          f"OMP_NUM_THREADS={n} in the environment instead", file=sys.stderr)


def get_num_threads() -> int:
    """``torch.get_num_threads()``: the BLAS's thread count (read through ctypes, or
    threadpoolctl's report; where neither finds the BLAS, the first of OMP_NUM_THREADS,
    OPENBLAS_NUM_THREADS, MKL_NUM_THREADS that is set, else the number of CPUs, the BLAS
    libraries' default)."""
    threads = blas_threads.get_threads()
    if threads is not None:
        return threads
    module = _threadpoolctl()
    if module is not None:
        counts = [pool["num_threads"] for pool in module.threadpool_info()
                  if pool.get("user_api") == "blas"]
        if counts:
            return int(max(counts))
    for name in _THREAD_VARIABLES:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return os.cpu_count() or 1


def is_tensor(obj: Any) -> bool:
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:  # noqa: A002 - PyTorch's name
    return input.numel()


def dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.dropout(input, p, train)``: ``F.dropout(input, p, training=train)``."""
    return functional.dropout(input, p, training=train)


def inference_mode(mode: bool = True) -> Any:
    """``torch.inference_mode()``: no graph is recorded, as under ``no_grad()`` (PyTorch adds
    restrictions on the tensors made inside; the numbers are the same)."""
    return no_grad() if mode else enable_grad()


def load(f: Any, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: Any = None, mmap: Any = None, **pickle_load_args: Any) -> Any:
    """``torch.load``, with torch's security model: a file in torch's format (written by
    real PyTorch or by ``torch.save`` here) is unpickled with ``weights_only=True`` by
    default, which rebuilds tensors, containers and primitives and refuses any other class
    unless allow-listed (``torch.serialization.add_safe_globals``); ``weights_only=False``
    loads anything (trusted files only). tinyattn's own NumPy checkpoints load too. Tensors
    come back on ``map_location`` when it names a device."""
    asked = ["pickle_module"] * (pickle_module is not None) + list(pickle_load_args)
    if asked:
        raise MissingTorchAttribute(f"torch.load({', '.join(asked)}=...)",
                                    "tinyattn's load takes a path or file, map_location, "
                                    "weights_only and mmap")
    mapped = map_location is None or callable(map_location) or isinstance(map_location, dict)
    target = None if mapped else str(map_location)
    loaded, torch_format = serialization.load_with_format(
        f, weights_only=weights_only is not False)
    return _to_tensors(loaded, target, arrays=not torch_format)


def save(obj: Any, f: Any, pickle_module: Any = None, pickle_protocol: int = 2,
         _use_new_zipfile_serialization: bool = True, _disable_byteorder_record: bool = False
         ) -> None:
    """``torch.save``: pickles ``obj`` in torch's zip format, so real PyTorch reads the file
    (tinyattn/io/torch_file.py)."""
    if pickle_module is not None or not _use_new_zipfile_serialization:
        raise MissingTorchAttribute("torch.save(pickle_module=... / legacy format)",
                                    "tinyattn writes torch's zip format with pickle")
    torch_file.save_torch(obj, f)


def _to_tensors(obj: Any, device: Optional[str], arrays: bool = True) -> Any:
    """Tensors moved to ``device``; with ``arrays``, numeric NumPy arrays (tinyattn's own
    archives store tensors as arrays) become Tensors too. A torch-format file's arrays stay
    arrays, as real torch returns what was pickled."""
    if arrays and isinstance(obj, np.ndarray) and obj.dtype.kind in "biuf":
        out = Tensor._wrap(obj)
        return out if device is None else out.to(device)
    if isinstance(obj, Tensor):
        return obj if device is None or obj.device == device else obj.to(device)
    if isinstance(obj, dict):
        copy = obj.copy()
        for key, value in obj.items():
            copy[key] = _to_tensors(value, device, arrays)
        return copy
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_tensors(value, device, arrays) for value in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_tensors(value, device, arrays) for value in obj)
    return obj


def gradcheck(func: Any, inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True) -> bool:
    """``torch.autograd.gradcheck``: tinyattn's finite-difference check (same defaults;
    inputs in float64; a failure raises an error naming the worst element)."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    return _gradcheck(func, inputs, eps=eps, atol=atol, rtol=rtol,
                      raise_exception=raise_exception)


_deterministic = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """``torch.use_deterministic_algorithms``: recorded for ``are_deterministic_algorithms_
    enabled()``. tinyattn's ops are deterministic on the CPU whatever the setting (NumPy has
    no nondeterministic kernels); on CUDA, scatter-adds may sum in any order either way."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms expects a bool, got {mode!r}")
    _deterministic.update(mode=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic["warn_only"]


def _cuda_manual_seed(seed: int) -> None:
    """Without a GPU torch ignores it; with one, tinyattn cannot seed CUDA alone."""
    if backend.cuda_is_available():
        raise MissingTorchAttribute(
            "torch.cuda.manual_seed", "tinyattn seeds every device at once; call "
            "torch.manual_seed(seed) instead")


def _current_accelerator() -> Optional[device]:
    return device("cuda") if backend.cuda_is_available() else None


def _mps_is_available() -> bool:
    return False        # tinyattn runs on NumPy (CPU) or CuPy (CUDA) only


class _LegacyTensorType(type):
    """The type of ``torch.LongTensor`` and friends: calling it makes a tensor of its dtype,
    and ``isinstance(x, torch.LongTensor)`` asks whether x is a tensor of that dtype."""

    dtype_name: str

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:
        name = cls.__name__
        if not args or (len(args) == 1 and isinstance(args[0], Size)):
            shape = tuple(args[0]) if args else (0,)
        elif all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
            shape = tuple(int(a) for a in args)
        elif (len(args) == 1 and not isinstance(args[0], (Tensor, str))
              and np.ndim(args[0]) > 0):              # a number is not data here (torch)
            return tensor(args[0], dtype=cls.dtype_name, device=device)
        else:
            given = ", ".join(type(a).__name__ for a in args)
            raise TypeError(
                f"torch.{name}({given}): expected data (a list or array), or sizes as ints "
                f"(torch.{name}(2, 3)); to convert a tensor use x.to(torch.{cls.dtype_name})")
        if any(n < 0 for n in shape):
            raise RuntimeError(f"torch.{name}{shape}: negative dimension {min(shape)}")
        # torch leaves the memory uninitialised; tinyattn fills it with zeros
        return zeros(shape, dtype=cls.dtype_name, device=device)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == _numpy_dtype(cls.dtype_name)


def _legacy(name: str, dtype_name: str) -> type:
    """``torch.<name>``: data -> a tensor of that data in ``dtype_name``; ints -> a tensor of
    that shape (uninitialised in torch, zeros here)."""
    return _LegacyTensorType(name, (), {"dtype_name": dtype_name, "__doc__": _legacy.__doc__})


_LEGACY = {name: _legacy(name, dtype_name) for name, dtype_name in [
    ("LongTensor", "int64"), ("FloatTensor", "float32"), ("DoubleTensor", "float64"),
    ("BoolTensor", "bool"), ("ByteTensor", "uint8"), ("CharTensor", "int8"),
    ("ShortTensor", "int16"), ("IntTensor", "int32"), ("HalfTensor", "float16"),
    ("BFloat16Tensor", "bfloat16")]}


_TENSOR_TYPE_WARNING = (
    "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
    "torch.set_default_dtype() and torch.set_default_device() as alternatives.")


_tensor_type_warned = False


def set_default_tensor_type(t: Any) -> None:
    """``torch.set_default_tensor_type(torch.DoubleTensor)`` (or ``"torch.DoubleTensor"``):
    deprecated in torch (its UserWarning here too), the default dtype of the legacy type; a
    non-floating type is torch's TypeError. A CUDA type (``"torch.cuda.FloatTensor"``) would
    also move the default device: refused by name (call set_default_device)."""
    if isinstance(t, str) and not isinstance(t, dtype):
        if t.startswith("torch.cuda."):
            raise MissingTorchAttribute(
                f"torch.set_default_tensor_type({t!r})",
                "tinyattn sets no default device through a tensor type; call "
                "torch.set_default_dtype() and torch.set_default_device() instead")
        name = t[len("torch."):] if t.startswith("torch.") else t
        if name not in _LEGACY:
            raise AttributeError(f"module 'torch' has no attribute '{name}'")
        t = _LEGACY[name]
    if not isinstance(t, _LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not _tensor_type_warned:            # torch warns once a process (TORCH_WARN_ONCE)
        warnings.warn(_TENSOR_TYPE_WARNING, UserWarning, stacklevel=2)
        globals()["_tensor_type_warned"] = True
    precision.set_default_dtype(t.dtype_name)


TORCH_SHIM_NAMES = {
    "device": device,
    "Size": Size,
    "finfo": precision.finfo,   # torch.finfo's fields, bfloat16 too (tinyattn.finfo)
    "iinfo": precision.iinfo,
    "is_autocast_enabled": amp.is_autocast_enabled,
    "get_autocast_dtype": lambda device_type: dtype(amp.get_autocast_dtype(device_type)),
    # the dtype questions answer with torch's dtype objects (print torch.float32, as torch's)
    "result_type": lambda tensor1, tensor2: torch_dtype(
        dtype_rules.result_type(tensor1, tensor2)),
    "promote_types": lambda type1, type2: torch_dtype(dtype_rules.promote_types(type1, type2)),
    "get_default_dtype": get_default_dtype,
    "set_default_dtype": set_default_dtype,
    "set_default_tensor_type": set_default_tensor_type,
    "set_num_threads": set_num_threads,
    "get_num_threads": get_num_threads,
    "is_tensor": is_tensor,
    "numel": numel,
    "inference_mode": inference_mode,
    "dropout": dropout,
    "load": load,
    "save": save,
    "inf": math.inf,
    "nan": math.nan,
    "pi": math.pi,
    "e": math.e,
    "dtype": dtype,
    "set_float32_matmul_precision": kernels.set_float32_matmul_precision,
    "get_float32_matmul_precision": kernels.get_float32_matmul_precision,
    "get_default_device": lambda: device(factories.get_default_device()),
    "use_deterministic_algorithms": use_deterministic_algorithms,
    "are_deterministic_algorithms_enabled": are_deterministic_algorithms_enabled,
    "is_deterministic_algorithms_warn_only_enabled":
        is_deterministic_algorithms_warn_only_enabled,
    **_DTYPES,
    **_LEGACY,
}

AUTOGRAD_SHIM_NAMES = {"gradcheck": gradcheck}

def _onnx_export(*args: Any, **kwargs: Any) -> None:
    raise MissingTorchAttribute(
        "torch.onnx.export", "tinyattn has no ONNX exporter: it records no TorchScript or "
        "FX graph of a model and has no ONNX operator set. Save the weights with "
        "torch.save(model.state_dict(), path) (real PyTorch loads that file) and export from "
        "real PyTorch")


# torch.onnx: importable (models test torch.onnx.is_in_onnx_export()); export says why not
ONNX_SHIM_NAMES = {"export": _onnx_export, "is_in_onnx_export": lambda: False}

# torch.serialization: save/load and the weights_only allow-list
SERIALIZATION_SHIM_NAMES = {
    "save": save, "load": load, "add_safe_globals": torch_file.add_safe_globals,
    "get_safe_globals": torch_file.get_safe_globals,
    "clear_safe_globals": torch_file.clear_safe_globals,
    "safe_globals": torch_file.safe_globals, "DEFAULT_PROTOCOL": torch_file.DEFAULT_PROTOCOL,
}

# torch.amp, and the older spellings torch.cuda.amp / torch.cpu.amp (tinyattn.amp)
def _amp_grad_scaler(device: str = "cuda", *args: Any, **kwargs: Any) -> Any:
    """``torch.amp.GradScaler``: torch's default device is "cuda" (tinyattn's is "cpu"), so
    a script that names none gets what torch gives it: disabled without CUDA."""
    return amp.GradScaler(device, *args, **kwargs)


def _legacy_grad_scaler(device: str) -> Any:
    """``torch.cuda.amp.GradScaler`` / ``torch.cpu.amp.GradScaler``: ``torch.amp.GradScaler
    (device, ...)`` with torch 2.13's FutureWarning (deprecated there), before the scaler's
    own warnings, as torch orders them."""
    def grad_scaler(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                      f"`torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning,
                      stacklevel=2)
        return amp.GradScaler(device, *args, **kwargs)
    grad_scaler.__name__ = grad_scaler.__qualname__ = "GradScaler"
    return grad_scaler


AMP_SHIM_NAMES = {"autocast": amp.autocast, "GradScaler": _amp_grad_scaler}
CUDA_AMP_SHIM_NAMES = {"autocast": amp.cuda_autocast, "GradScaler": _legacy_grad_scaler("cuda")}
CPU_AMP_SHIM_NAMES = {"autocast": amp.cpu_autocast, "GradScaler": _legacy_grad_scaler("cpu")}

CUDA_SHIM_NAMES = {
    "is_available": backend.cuda_is_available,
    "device_count": lambda: 1 if backend.cuda_is_available() else 0,
    "manual_seed": _cuda_manual_seed,
    "manual_seed_all": _cuda_manual_seed,
    "synchronize": lambda device=None: backend.synchronize("cuda"),
    "is_bf16_supported": lambda *args, **kwargs: False,   # CuPy has no bfloat16 arrays
}

ACCELERATOR_SHIM_NAMES = {
    "is_available": backend.cuda_is_available,
    "current_accelerator": _current_accelerator,
}

MPS_SHIM_NAMES = {"is_available": _mps_is_available, "is_built": _mps_is_available}

# torch.backends.cudnn's switches, with torch's default values (a script reads them as flags;
# is_available() says there is no cuDNN); tinyattn uses no cuDNN and is deterministic, so
# setting them changes nothing it computes.
# torch.backends.cuda's attention-kernel switches and matmul precision (tinyattn/kernels.py)
BACKENDS_CUDA_SHIM_NAMES = {name: getattr(kernels, name) for name in (
    "sdp_kernel", "matmul", "flash_sdp_enabled", "math_sdp_enabled", "mem_efficient_sdp_enabled",
    "cudnn_sdp_enabled", "enable_flash_sdp", "enable_math_sdp", "enable_mem_efficient_sdp",
    "enable_cudnn_sdp")}
BACKENDS_CUDA_SHIM_NAMES["is_built"] = lambda: False

AUTOGRAD_PROFILER_SHIM_NAMES = {"profile": _profiler.LegacyProfile,
                            "record_function": _profiler.record_function}

CUDNN_SHIM_NAMES = {"is_available": lambda: False, "enabled": True, "deterministic": False,
                    "benchmark": False, "allow_tf32": True}   # torch's defaults (no effect)


# torch.load under run-torch gives torch's dtype and device objects back (not their names)
torch_file.LOADED_TYPES.update(dtype=dtype, device=device)
