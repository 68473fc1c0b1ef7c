"""``Tensor``: an array, its gradient, and the op that made it; ``tensor``, ``as_tensor`` and
``from_numpy`` (the other creation functions, zeros, randn, arange, ..., are in factories.py).

A ``Tensor`` holds ``.data`` (a NumPy or CuPy array), ``.grad`` (a Tensor of the same shape and
dtype, or None) and, when it was produced by an op that must be differentiated, ``._ctx``,
the ``Function`` instance that made it. Arithmetic and the op methods (``x.softmax(-1)``,
``x.sum(dim, keepdim)``, ...) are attached by ``tinyattn.ops``, one explicit line each; so are
the in-place ops (``add_``, ``x[i] = v``, ``-=``), which count each change in the tensor's
version (see ``tinyattn.autograd``).

Construction follows PyTorch: ``tensor(data)`` copies data and infers the dtype (the default
float dtype for Python floats, int64 for ints, bool; a NumPy array keeps its dtype);
``Tensor(data)`` copies data into a tensor of the default float dtype (PyTorch's legacy
constructor) and ``Tensor(2, 3)`` makes a (2, 3) tensor of zeros; ``from_numpy(array)`` and
``as_tensor(array)`` share the array's memory.

dtype policy: the default float dtype (float32, unless ``set_default_dtype`` changed it: one
setting for the process, in precision.py) unless asked otherwise; float64 fully supported; no
op ever turns a float32 tensor into a float64 one. Python numbers combined with a tensor
take its dtype.

Library code reads a tensor's array as ``t._data``. User code reads ``t.data``, which is the
same array; writes into it are not counted, as in torch (a pending backward uses what is
there). Under ``detect_anomaly()`` (opt-in), while an op has saved the array for a backward
that has not run yet, ``.data`` is a read-only view whose writes raise an error that says what
to do instead (CPU arrays; on a GPU the array is returned).

The package, by concept: ``core.py`` (the class: data, gradient, versions, autograd),
``conversion.py`` (``to``, ``numpy``, ``item``, comparisons), ``creation.py`` (``tensor``,
``as_tensor``, ``from_numpy``), ``dtypes.py`` (``normalize_dtype``) and ``saved_data.py``
(the read-only ``.data`` of a saved array, in anomaly mode). Every name is importable from
here, as before.
"""
from __future__ import annotations

from typing import Any

from .core import Tensor
from .creation import as_tensor, from_numpy, tensor
from .dtypes import DTypeLike, normalize_dtype
from .saved_data import SavedDataWriteError

__all__ = ["Tensor", "SavedDataWriteError", "tensor", "as_tensor", "from_numpy",
           "normalize_dtype", "DTypeLike", "zeros", "ones", "zeros_like", "ones_like", "randn",
           "rand", "arange", "full"]

_MOVED_TO_FACTORIES = {"zeros", "ones", "zeros_like", "ones_like", "randn", "rand", "arange",
                       "full"}


def __getattr__(name: str) -> Any:
    """The creation functions live in tinyattn/factories.py (which imports this module); the
    ones that used to be here stay importable from here (``from .tensor import zeros``)."""
    if name in _MOVED_TO_FACTORIES:
        from .. import factories  # noqa: PLC0415 - factories imports this package
        return getattr(factories, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
