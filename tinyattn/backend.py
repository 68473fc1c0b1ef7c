"""The array backend: the only module in tinyattn that knows CuPy exists.

Every op receives arrays and asks ``get_array_module(x)`` for the module ``xp`` that owns
them (NumPy on the CPU, CuPy on a GPU), then writes ``xp.exp(x)`` and runs on either. The few
places where NumPy and CuPy differ (scatter-add with repeated indices, ``erf``, random
generators, host copies) each have one function here that chooses.

Devices are named as in PyTorch: ``"cpu"`` and ``"cuda"`` (``"cuda:0"`` is accepted).
A third device, registered only by the test suite, can stand in for a GPU on a machine without
one (see ``register_device``): its arrays refuse implicit conversion to NumPy as CuPy's do, so a
test can prove no op leaks to the host.
"""
from __future__ import annotations

import ctypes
import importlib
import math
import os
import sys
from types import ModuleType
from typing import Any, Callable, Dict, Optional

import warnings

import numpy as np

# torch computes log(0) = -inf, 1/0 = inf, exp(1000) = inf, sqrt(-1) = NaN without a word;
# NumPy adds a RuntimeWarning ("divide by zero encountered in log") on stderr for each. Those
# raised inside tinyattn's own code (not the exercises, which show NumPy on purpose) are
# silenced, so a script prints what it prints under torch (word_language_model's causal mask
# is torch.log(torch.tril(ones))). A filter the user adds later (warnings.simplefilter
# ("error")) comes first and still sees them; NumPy in the user's own code is untouched.
# Installed at import and again by run-torch before the script (an import inside a
# warnings.catch_warnings() block, as pytest's collection, loses it when the block ends).
# NumPy's own Python-level reductions (x.sum() through numpy/_core/_methods.py) are not
# tinyattn's frames and still warn; the backward pass is quiet as a whole (autograd/engine.py).
def quiet_numpy_warnings() -> None:
    warnings.filterwarnings(
        "ignore", message=r"(divide by zero|invalid value|overflow|underflow) encountered in "
                          r"|Mean of empty slice",
        category=RuntimeWarning, module=r"tinyattn\.(?!exercises\b)")


quiet_numpy_warnings()

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called here that names the first frame
    outside tinyattn (the user's line, as torch's warnings name it), however many of
    tinyattn's wrappers lie between (as a function of the caller of user_stacklevel)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


__all = [
    "get_array_module", "device_of", "normalize_device", "array_module_for", "to_device",
    "to_host", "cuda_is_available", "erf", "scatter_add", "default_generator", "manual_seed",
    "get_rng_state", "set_rng_state", "register_device", "CUDA_INSTALL_HINT", "uniform",
    "standard_normal", "integers", "cuda_unavailable_reason", "device_info", "synchronize",
    "erf_is_slow", "memory_bytes", "may_share_memory", "tune_allocator", "ALLOCATOR_TUNING",
    "accurate_sum", "accurate_cumsum",
    "special_module",
]

CUDA_INSTALL_HINT = (
    'install CuPy for your CUDA version, e.g. pip install "tinyattn[gpu]" (CUDA 12, '
    "cupy-cuda12x) or pip install cupy-cuda11x for CUDA 11"
)

_cupy: Optional[ModuleType] = None
_cupy_error: Optional[str] = None
_cupy_checked = False

# Extra devices (name -> record) registered at run time, e.g. the test suite's strict device.
_extra_devices: Dict[str, "_DeviceRecord"] = {}


class _DeviceRecord:
    def __init__(self, name: str, xp: ModuleType, owns: Callable[[Any], bool],
                 from_host: Callable[[Any], Any], to_host: Callable[[Any], np.ndarray],
                 erf: Callable[[Any], Any], scatter_add: Callable[[Any, Any, Any], None]):
        self.name, self.xp, self.owns = name, xp, owns
        self.from_host, self.to_host = from_host, to_host
        self.erf, self.scatter_add = erf, scatter_add


def register_device(name: str, xp: ModuleType, owns: Callable[[Any], bool],
                    from_host: Callable[[Any], Any], to_host: Callable[[Any], np.ndarray],
                    erf: Callable[[Any], Any], scatter_add: Callable[[Any, Any, Any], None]
                    ) -> None:
    """Register an extra device (used by the test suite's CuPy stand-in)."""
    _extra_devices[name] = _DeviceRecord(name, xp, owns, from_host, to_host, erf, scatter_add)


def _load_cupy() -> Optional[ModuleType]:
    """Import CuPy once, lazily; remember why it failed so errors can say so."""
    global _cupy, _cupy_error, _cupy_checked
    if not _cupy_checked:
        _cupy_checked = True
        try:
            _cupy = importlib.import_module("cupy")
            if _cupy.cuda.runtime.getDeviceCount() < 1:
                _cupy_error, _cupy = "CuPy is installed but sees no CUDA device", None
        except Exception as exc:  # ImportError, or a CUDA driver error at device query
            _cupy, _cupy_error = None, f"{type(exc).__name__}: {exc}"
    return _cupy


def cuda_is_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    return _load_cupy() is not None


def cuda_unavailable_reason() -> Optional[str]:
    """Why "cuda" cannot be used (None when it can)."""
    return None if cuda_is_available() else _cupy_error


def device_info(device: str) -> str:
    """A one-line description of a device, for reports."""
    device = normalize_device(device)
    if device != "cuda":
        return device
    cupy = _require_cuda()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return (f"cupy {cupy.__version__}, {name}, CUDA runtime "
            f"{cupy.cuda.runtime.runtimeGetVersion()}")


def memory_bytes(device: str) -> Optional[int]:
    """Total memory of ``device`` in bytes: the GPU's for "cuda", the machine's RAM for the
    CPU (and NumPy stand-ins); None when it cannot be found out."""
    if normalize_device(device) == "cuda":
        try:
            return int(_require_cuda().cuda.Device().mem_info[1])
        except Exception:  # no device, or a driver error: say unknown, do not guess
            return None
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def synchronize(device: str) -> None:
    """Wait for queued work on ``device`` to finish (for timing; a no-op on the CPU)."""
    if normalize_device(device) == "cuda":
        _require_cuda().cuda.Stream.null.synchronize()


def _cupy_owns(array: Any) -> bool:
    if _cupy is None and type(array).__module__.startswith("cupy"):
        _load_cupy()  # a CuPy array arrived before any tinyattn call asked for "cuda"
    return _cupy is not None and isinstance(array, _cupy.ndarray)


def get_array_module(array: Any) -> ModuleType:
    """NumPy or CuPy (or a registered stand-in), whichever owns ``array``."""
    if isinstance(array, np.ndarray) or np.isscalar(array):
        for record in _extra_devices.values():
            if record.owns(array):
                return record.xp
        return np
    if _cupy_owns(array):
        return _cupy
    for record in _extra_devices.values():
        if record.owns(array):
            return record.xp
    return np


def device_of(array: Any) -> str:
    """The device name of an array: 'cpu', 'cuda' or a registered stand-in's name."""
    for record in _extra_devices.values():
        if record.owns(array):
            return record.name
    if _cupy_owns(array):
        return "cuda"
    return "cpu"


def normalize_device(device: Any) -> str:
    """Accept 'cpu', 'cuda', 'cuda:0' (and registered names); reject anything else clearly."""
    name = str(device)
    if name in ("cuda:0", "cpu:0"):
        name = name[:-2]
    if name in ("cpu", "cuda") or name in _extra_devices:
        return name
    if name.startswith("cuda:"):
        raise ValueError(f"device {device!r}: tinyattn uses one GPU, 'cuda' (or 'cuda:0'); "
                         f"choose which one with CUDA_VISIBLE_DEVICES")
    raise ValueError(f"unknown device {device!r}: use 'cpu' or 'cuda'")


def _require_cuda() -> ModuleType:
    cupy = _load_cupy()
    if cupy is None:
        raise RuntimeError(
            f"device 'cuda' was requested but is not available ({_cupy_error}). To use a GPU, "
            f"{CUDA_INSTALL_HINT}; check with tinyattn.cuda_is_available()."
        )
    return cupy


def array_module_for(device: str) -> ModuleType:
    """The array module that creates arrays on ``device``."""
    device = normalize_device(device)
    if device == "cpu":
        return np
    if device == "cuda":
        return _require_cuda()
    return _extra_devices[device].xp


def to_host(array: Any) -> np.ndarray:
    """An explicit copy to a NumPy array (the only sanctioned device-to-host transfer)."""
    for record in _extra_devices.values():
        if record.owns(array):
            return record.to_host(array)
    if _cupy_owns(array):
        return _cupy.asnumpy(array)
    return np.asarray(array)


def to_device(array: Any, device: str) -> Any:
    """Copy ``array`` to ``device`` (no copy when it is already there)."""
    device = normalize_device(device)
    if device_of(array) == device:
        return array
    host = to_host(array)
    if device == "cpu":
        return host
    if device == "cuda":
        return _require_cuda().asarray(host)
    return _extra_devices[device].from_host(host)


def may_share_memory(a: Any, b: Any) -> bool:
    """Whether two arrays might overlap in memory (a cheap bounds check, no false negatives):
    how an op that may return a view (reshape, permute, indexing) learns that it did."""
    if type(a) is np.ndarray and type(b) is np.ndarray:
        return bool(np.may_share_memory(a, b))
    xp = get_array_module(a)
    check = getattr(xp, "may_share_memory", None)
    return bool(check(a, b)) if check is not None else True


def erf(x: Any) -> Any:
    """The error function on either device (SciPy on the CPU, cupyx on CUDA), in x's dtype
    (SciPy has no float16 loop and answers float16 in float32)."""
    for record in _extra_devices.values():
        if record.owns(x):
            return record.erf(x)
    if _cupy_owns(x):
        import cupyx.scipy.special  # noqa: PLC0415 - only reached with CuPy present
        return cupyx.scipy.special.erf(x)
    return _scipy_special().erf(x).astype(x.dtype, copy=False)


def special_module(x: Any) -> Any:
    """SciPy's special functions (``erfinv``, ``gammaln``, ``i0e``, ...) for x's device:
    scipy.special on the CPU, cupyx.scipy.special on CUDA, an extra device's ``xp.special``."""
    for record in _extra_devices.values():
        if record.owns(x):
            return record.xp.special
    if _cupy_owns(x):
        import cupyx.scipy.special  # noqa: PLC0415 - only reached with CuPy present
        return cupyx.scipy.special
    return _scipy_special()


def _scipy_special() -> ModuleType:
    """scipy.special, imported on first use, not when tinyattn is imported: it imports all
    of NumPy's submodules (f2py, testing) and costs about as much as the rest of tinyattn's
    import, which every process pays (DataLoader and spawn workers, each distributed rank,
    each command) while most never call a special function."""
    import scipy.special  # noqa: PLC0415 - see the docstring
    return scipy.special


def erf_is_slow(x: Any) -> bool:
    """True for float32 NumPy arrays, where SciPy's erf runs one element at a time and a
    vectorised polynomial is several times faster (CuPy's erf is one fused kernel)."""
    return type(x) is np.ndarray and x.dtype == np.float32


# A float32 sum of n terms accumulated one after another (NumPy does so along every axis but
# the contiguous last one) loses up to n * eps; torch's kernels sum in cascades. Past this
# many terms a float32 sum accumulates in float64 and rounds once: as accurate as torch's or
# more (tests/accuracy_vs_torch.py), for about twice the time of the bare sum.
WIDE_SUM_TERMS = 64
# Along any axis but the last, NumPy adds one term after another: past this many terms such
# a float32 sum goes wide too (sequential sums of 16 to 64 terms were 2 to 3 times torch's
# error, whose outer reductions add rows in cascades: tests/test_probe43.py).
SHORT_SUM_TERMS = 8


def wide_sum_needed(array: Any, axis: Any) -> bool:
    """Whether a float32 sum of ``array`` over ``axis`` (None: all) accumulates in float64:
    more than WIDE_SUM_TERMS terms, or more than SHORT_SUM_TERMS along other axes than the
    last (which NumPy adds pairwise)."""
    if array.dtype != np.float32 or array.size <= SHORT_SUM_TERMS:
        return False
    if axis is None:
        axes = tuple(range(array.ndim))
    else:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
        axes = tuple(a % array.ndim for a in axes) if array.ndim else ()
    terms = 1
    for a in axes:
        terms *= array.shape[a]
    if terms > WIDE_SUM_TERMS:
        return True
    flags = getattr(array, "flags", None)
    contiguous = flags is None or flags.c_contiguous     # (a transposed view: not pairwise)
    along_last = contiguous and all(array.shape[a] == 1 for a in axes if a != array.ndim - 1)
    return terms > SHORT_SUM_TERMS and not along_last


def accurate_sum(array: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``array.sum(axis, keepdims=...)``, accumulated in float64 when ``array`` is float32
    and ``wide_sum_needed``; the result keeps float32. A sum over the leading axes of a NumPy
    array adds float32 blocks of SHORT_SUM_TERMS rows in float64 (``_sum_leading_axes``),
    which is as accurate and much faster."""
    if not wide_sum_needed(array, axis):
        return _plain_sum(array, axis, keepdims)
    if axis is not None:
        axes = (axis,) if isinstance(axis, (int, np.integer)) else axis
    if (not keepdims and type(array) is np.ndarray and array.flags.c_contiguous
            and axis is not None and tuple(axes) == tuple(range(len(axes)))):
        return _sum_leading_axes(array, len(axes))
    if type(array) is np.ndarray:
        return np.add.reduce(array, axis=axis, keepdims=keepdims,
                             dtype=np.float64).astype(np.float32)
    return array.sum(axis=axis, keepdims=keepdims, dtype=np.float64).astype(np.float32)


def _plain_sum(array: Any, axis: Any, keepdims: bool) -> Any:
    """``array.sum(axis, keepdims=...)``; for a NumPy array the ufunc's reduce itself, which
    is what ndarray.sum runs (the same dtypes and values) without passing through NumPy's
    numpy/_core/_methods.py: a RuntimeWarning it raises (inf + -inf: "invalid value
    encountered in reduce") is then raised in tinyattn's frame, which quiet_numpy_warnings
    silences, as torch says nothing."""
    if type(array) is np.ndarray:
        return np.add.reduce(array, axis=axis, keepdims=keepdims)
    return array.sum(axis=axis, keepdims=keepdims)


def _sum_leading_axes(array: np.ndarray, count: int) -> np.ndarray:
    """A float32 sum over the first ``count`` axes (a bias's gradient, unbroadcast): blocks of
    WIDE_SUM_TERMS rows summed in float32 (each a short sum, as accurate as any), the block
    sums added in float64, rounded once. The same accuracy as casting every term to float64
    (within a few units of float32 round-off: tests/accuracy_vs_torch.py) at a quarter of the
    time (0.13 against 0.46 ms for a (2048, 512) gradient), since no term is converted."""
    rows = array.reshape(-1, math.prod(array.shape[count:]))                     # (N, M)
    whole = rows.shape[0] // SHORT_SUM_TERMS * SHORT_SUM_TERMS
    blocks = rows[:whole].reshape(-1, SHORT_SUM_TERMS, rows.shape[1]).sum(axis=1)
    total = blocks.sum(axis=0, dtype=np.float64)                                 # (M,)
    if whole < rows.shape[0]:
        total += rows[whole:].sum(axis=0, dtype=np.float64)
    return total.astype(np.float32).reshape(array.shape[count:])


def accurate_cumsum(array: Any, axis: int) -> Any:
    """Running sums along ``axis``, accumulated in float64 for a long float32 axis."""
    xp = get_array_module(array)
    if type(array) is np.ndarray and array.dtype.kind == "f":   # no numpy frame between
        if array.dtype == np.float32 and array.shape[axis] > WIDE_SUM_TERMS:   # (_plain_sum)
            return np.add.accumulate(array, axis=axis, dtype=np.float64).astype(np.float32)
        return np.add.accumulate(array, axis=axis)
    if array.dtype == np.float32 and array.shape[axis] > WIDE_SUM_TERMS:
        return xp.cumsum(array, axis=axis, dtype=np.float64).astype(np.float32)
    return xp.cumsum(array, axis=axis)


def scatter_add(target: Any, indices: Any, values: Any) -> None:
    """``target[indices] += values`` in place, correct when ``indices`` repeat."""
    for record in _extra_devices.values():
        if record.owns(target):
            record.scatter_add(target, indices, values)
            return
    if _cupy_owns(target):
        import cupyx  # noqa: PLC0415
        cupyx.scatter_add(target, indices, values)
    elif _are_rows(target, indices, values):
        _add_rows(target, indices, values)
    else:
        np.add.at(target, indices, values)


def _are_rows(target: np.ndarray, indices: Any, values: Any) -> bool:
    """Whole rows of ``target`` picked by a 1-D array of non-negative ints (an embedding's
    gradient): the case ``_add_rows`` handles."""
    return (isinstance(indices, np.ndarray) and indices.ndim == 1 and indices.size > 0
            and indices.dtype.kind in "iu" and isinstance(values, np.ndarray)
            and values.shape == indices.shape + target.shape[1:] and int(indices.min()) >= 0)


def _add_rows(target: np.ndarray, indices: np.ndarray, values: np.ndarray) -> None:
    """``np.add.at(target, indices, values)`` by sorting instead of element by element: sort
    the ids, sum each run of equal ids with ``np.add.reduceat``, then add the sums to rows that
    are now distinct. Measured: about 7x faster for 1024 ids of 256 floats from a 65-token
    vocabulary (the training script's case); about 1.2x slower than np.add.at for 8192 ids of
    768 floats from a 50,257-token vocabulary, where few ids repeat."""
    order = np.argsort(indices, kind="stable")
    ids = indices[order]
    starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))  # first of each run
    target[ids[starts]] += np.add.reduceat(values[order], starts, axis=0)


# ---------------------------------------------------------------- random numbers
# One generator per device, all reseeded by manual_seed. CPU draws come from NumPy's PCG64;
# CUDA draws from CuPy's generator, so dropout masks never travel from the host.
_generators: Dict[str, Any] = {}
_seed = 0


def manual_seed(seed: int) -> None:
    """Seed every device's default generator (like ``torch.manual_seed``)."""
    global _seed
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"manual_seed expects a non-negative integer, got {seed!r}")
    _seed = int(seed)
    _generators.clear()


def set_default_generator(device: str, generator: Any) -> None:
    """Make ``generator`` the default of ``device`` until the next ``manual_seed``."""
    _generators[normalize_device(device)] = generator


def default_generator(device: str = "cpu") -> Any:
    """The default generator of ``device`` (created from the last ``manual_seed``)."""
    device = normalize_device(device)
    if device not in _generators:
        if device == "cuda":
            _generators[device] = _require_cuda().random.default_rng(_seed)
        else:
            _generators[device] = np.random.default_rng(_seed)
    return _generators[device]


def uniform(shape: Any, device: str, dtype: Any, generator: Any = None) -> Any:
    """Uniform samples in [0, 1) made on ``device`` (no host-to-device copy on CUDA)."""
    gen = generator if generator is not None else default_generator(device)
    return _draw(gen, "random", shape, device, dtype)


def standard_normal(shape: Any, device: str, dtype: Any, generator: Any = None) -> Any:
    """Standard normal samples made on ``device``."""
    gen = generator if generator is not None else default_generator(device)
    return _draw(gen, "standard_normal", shape, device, dtype)


def integers(low: int, high: int, shape: Any, device: str, generator: Any = None) -> Any:
    """Uniform int64 samples in [low, high) made on ``device``."""
    gen = generator if generator is not None else default_generator(device)
    return to_device(gen.integers(low, high, size=shape, dtype=np.int64), device)


def _draw(gen: Any, method: str, shape: Any, device: str, dtype: Any) -> Any:
    device = normalize_device(device)
    if device == "cuda" and not isinstance(gen, np.random.Generator):
        # CuPy draws only float32/float64: draw float32 and cast for float16.
        draw_dtype = np.float32 if np.dtype(dtype).itemsize < 4 else dtype
        return getattr(gen, method)(shape, dtype=draw_dtype).astype(dtype, copy=False)
    # A NumPy generator (the CPU's, or one the caller passed for any device) draws on the
    # host in float64, the same stream whatever the dtype, then moves to the device.
    data = getattr(gen, method)(shape).astype(dtype)
    return data if device == "cpu" else to_device(data, device)


def get_rng_state() -> Dict[str, Any]:
    """The seed and the state of every NumPy-based generator in use (the CPU's, and those of
    registered stand-in devices): enough to resume a run bit for bit on the CPU.

    CuPy's generators expose no state to save, so on CUDA a resumed run continues with fresh
    draws from the seed (dropout masks differ from an uninterrupted run; see docs/gpu.md).
    """
    state: Dict[str, Any] = {"seed": _seed, "cpu": default_generator("cpu").bit_generator.state}
    for device, gen in _generators.items():
        if device != "cpu" and isinstance(gen, np.random.Generator):
            state[device] = gen.bit_generator.state
    return state


def set_rng_state(state: Dict[str, Any]) -> None:
    """Restore what ``get_rng_state`` returned."""
    global _seed
    _seed = int(state["seed"])
    _generators.clear()
    for device, gen_state in state.items():
        if device != "seed":
            default_generator(device).bit_generator.state = gen_state


# ---------------------------------------------------------------- the C allocator (Linux)
# A training step allocates and frees the same large arrays (activations, gradients) every
# step. With glibc's defaults, arrays above the mmap threshold are mapped afresh each time
# and freed memory at the heap's top is given back to the system, so every step pays page
# faults and kernel time for memory it had a moment ago (a medium GPT step: about 6,500
# faults and 19 ms of kernel time; docs/benchmarks.md#memory-reuse). torch's own allocator
# keeps such memory; for NumPy's arrays tinyattn asks glibc to, once, at import: arrays up
# to 32 MiB come from the heap, and up to 128 MiB of freed heap stays in the process for the
# next step. The process's resident memory after a large computation stays that much
# higher. It is left alone where the user set either threshold (MALLOC_MMAP_THRESHOLD_,
# MALLOC_TRIM_THRESHOLD_) or TINYATTN_SYSTEM_MALLOC=1, and off glibc.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD, _TRIM_THRESHOLD = 32 << 20, 128 << 20
ALLOCATOR_TUNING: Optional[str] = None      # what tune_allocator set, for doctor and tests


def tune_allocator() -> Optional[str]:
    """Set glibc's mmap and trim thresholds as described above; returns what was set, or
    None where nothing was (not glibc, or the user chose)."""
    global ALLOCATOR_TUNING
    if (not sys.platform.startswith("linux") or os.environ.get("TINYATTN_SYSTEM_MALLOC") == "1"
            or "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version                  # glibc only (musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    if mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD,
                                                               _TRIM_THRESHOLD):
        ALLOCATOR_TUNING = (f"glibc mmap threshold {_MMAP_THRESHOLD >> 20} MiB, trim threshold "
                            f"{_TRIM_THRESHOLD >> 20} MiB (TINYATTN_SYSTEM_MALLOC=1 turns it off)")
    return ALLOCATOR_TUNING


tune_allocator()
