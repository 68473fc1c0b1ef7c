"""How tensors, shapes and dtypes print: as PyTorch prints them, so a learner can compare
their output with a tutorial's line by line.

``tensor([1.5000, 2.0000])``, ``tensor([1., 2.])`` (integer-valued floats), scientific
notation when the magnitudes span more than 1000x (``tensor([1.0000e-05, 1.0000e+03])``),
a ``dtype=`` suffix only for dtypes other than the default float dtype (float32 unless set),
int64 and bool, ``requires_grad=True``
or ``grad_fn=<MulBackward0>``, 80-column lines and ``...`` past 1000 elements: the rules of
``torch/_tensor_str.py``, re-implemented here from its documented behaviour.

``options`` holds the print options (``set_printoptions`` writes them): ``precision``,
``threshold``, ``edgeitems``, ``linewidth``, ``sci_mode`` (None: decide per tensor) and
``torch_names`` (set while ``python -m tinyattn run-torch`` runs a script, so that dtypes in
a tensor's repr and shapes read ``torch.float64`` and ``torch.Size([2, 3])``; plain tinyattn
prints ``float64`` and ``(2, 3)``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, List, Optional

import numpy as np

from . import precision

__all__ = ["PrintOptions", "options", "set_printoptions", "get_printoptions", "tensor_repr", "Size",
           "dtype_name"]


@dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: Optional[bool] = None
    torch_names: bool = False


options = PrintOptions()


def set_printoptions(precision: Optional[int] = None, threshold: Optional[float] = None,
                     edgeitems: Optional[int] = None, linewidth: Optional[int] = None,
                     profile: Optional[str] = None, sci_mode: Optional[bool] = None) -> None:
    """torch.set_printoptions: change what is given; ``profile`` is "default", "short" or
    "full" (resetting precision, threshold, edgeitems and linewidth first, as torch)."""
    if profile is not None:
        presets = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
                   "full": (4, math.inf, 3, 80)}
        if profile not in presets:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(presets)}, "
                             f"got {profile!r}")
        (options.precision, options.threshold, options.edgeitems,
         options.linewidth) = presets[profile]
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(options, name, value)
    options.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current options, as a dict (torch keeps them in ``torch._tensor_str.PRINT_OPTS``)."""
    return {name: getattr(options, name) for name in ("precision", "threshold", "edgeitems",
                                                       "linewidth", "sci_mode")}


class Size(tuple):
    """A tensor's shape: a tuple (``x.shape == (2, 3)`` holds, it unpacks and indexes as one)
    that prints as ``torch.Size([2, 3])`` under run-torch and as ``(2, 3)`` otherwise."""

    def __repr__(self) -> str:
        if options.torch_names:
            return f"torch.Size({list(self)})"
        return tuple.__repr__(self)

    __str__ = __repr__

    def numel(self) -> int:
        return int(math.prod(self))

    def __getitem__(self, index: Any) -> Any:
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other: Any) -> "Size":
        return Size(tuple.__add__(self, tuple(other)))


def dtype_name(dtype: Any) -> str:
    """``float32``, or ``torch.float32`` under run-torch."""
    name = np.dtype(dtype).name
    return f"torch.{name}" if options.torch_names else name


class _Formatter:
    """One width and one style (fixed, integer-valued or scientific) for every element."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f" or values.dtype.name == "bfloat16"
        self.int_mode, self.sci_mode, self.width = True, False, 1
        flat = values.reshape(-1)
        if not self.floating:
            for value in flat.tolist():
                self.width = max(self.width, len(str(value)))
            return
        flat = flat.astype(np.float64)
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size:
            absolute = np.abs(finite)
            low, high = absolute.min(), absolute.max()
            self.int_mode = bool((finite == np.ceil(finite)).all())
            p = options.precision
            if self.int_mode:
                self.sci_mode = high / low > 1000.0 or high > 1.0e8
            else:
                self.sci_mode = high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4
            if options.sci_mode is not None:       # set_printoptions(sci_mode=...) decides,
                self.sci_mode = options.sci_mode   # and the width follows the chosen style
            if self.sci_mode:
                shown = [f"{v:.{p}e}" for v in finite]
            else:
                shown = [f"{v:.0f}." if self.int_mode else f"{v:.{p}f}" for v in finite]
            self.width = max(len(s) for s in shown)     # (all zeros: "0." even in sci_mode)

    def format(self, value: Any) -> str:
        p = options.precision
        if not self.floating:
            text = str(value)
        elif self.sci_mode:
            text = f"{value:.{p}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{p}f}"
        return text.rjust(self.width)


class _ComplexFormatter:
    """torch's complex printing: the real parts and the imaginary parts each get a
    ``_Formatter`` of their own; an element reads ``1.5000+2.0000j`` (the real part padded to
    its width, the imaginary part's sign always shown and its padding dropped)."""

    def __init__(self, values: np.ndarray):
        self.real = _Formatter(values.real)
        self.imag = _Formatter(values.imag)
        self.width = self.real.width + self.imag.width + 1

    def format(self, value: Any) -> str:
        value = complex(value)
        imag = (self.imag.format(value.imag) + "j").lstrip()
        if imag[0] not in "+-":
            imag = "+" + imag
        return self.real.format(value.real) + imag


def _formatter(values: np.ndarray) -> Any:
    return _ComplexFormatter(values) if values.dtype.kind == "c" else _Formatter(values)


def _summarized(values: np.ndarray) -> np.ndarray:
    """The elements that are shown when the tensor is summarised (edge items of each dim)."""
    if values.ndim == 0:
        return values
    e = options.edgeitems
    if values.shape[0] > 2 * e:
        values = np.concatenate([values[:e], values[-e:]])
    return np.stack([_summarized(row) for row in values]) if values.ndim > 1 else values


def _vector(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, int(math.floor((options.linewidth - indent) / (fmt.width + 2))))
    e = options.edgeitems
    if summarize and values.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in values[:e].tolist()] + [" ..."]
                + [fmt.format(v) for v in values[-e:].tolist()])
    else:
        data = [fmt.format(v) for v in values.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt.format(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    e = options.edgeitems
    rows: List[str]
    if summarize and values.shape[0] > 2 * e:
        rows = ([_nested(values[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                + [_nested(values[i], indent + 1, summarize, fmt)
                   for i in range(values.shape[0] - e, values.shape[0])])
    else:
        rows = [_nested(row, indent + 1, summarize, fmt) for row in values]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def tensor_repr(values: np.ndarray, device: str = "cpu", grad_fn: Optional[str] = None,
                requires_grad: bool = False, prefix: str = "tensor(") -> str:
    """PyTorch's ``repr`` of a tensor holding the host array ``values``."""
    indent = len(prefix)
    suffixes = []
    if device != "cpu":
        suffixes.append(f"device='{device}'")
    # torch leaves out the dtype it can infer from the printed values: the default float
    # dtype (float32 unless set_default_dtype changed it), int64 (integers), bool (True/False)
    # and the default complex (complex128 under a float64 default, else complex64). An empty
    # tensor shows no values to infer from, so only the default float dtype goes unnamed:
    # tensor([], dtype=torch.int64).
    float_default = precision.get_default_dtype()
    complex_default = np.dtype(np.complex128 if float_default == np.float64 else np.complex64)
    default = values.dtype in (float_default, np.dtype(np.int64), np.dtype(np.bool_),
                               complex_default)
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        default = values.dtype == float_default   # torch names int64 and bool here
        body = "[]"
    else:
        summarize = values.size > options.threshold
        shown = _summarized(values) if summarize else values
        body = _nested(values, indent, summarize, _formatter(shown))
    if not default:
        suffixes.append(f"dtype={dtype_name(values.dtype)}")
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    last = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last + len(suffix) + 2 > options.linewidth:
            text += ",\n" + " " * indent + suffix
            last = indent + len(suffix)
        else:
            text += ", " + suffix
            last += len(suffix) + 2
    return text + ")"
