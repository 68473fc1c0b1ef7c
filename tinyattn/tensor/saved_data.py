"""What ``Tensor.data`` hands out while a pending backward needs the array: a read-only view
whose writes raise ``SavedDataWriteError`` with what to do instead (a write into it would make
that backward silently wrong). tensor/core.py's ``_user_array`` decides when.
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SavedDataWriteError"]


class SavedDataWriteError(RuntimeError):
    """Writing into ``.data`` of a tensor whose array a pending backward needs."""


class _SavedArray(np.ndarray):
    """What ``Tensor.data`` hands out while the array is saved for a pending backward: a
    read-only view whose writes raise ``SavedDataWriteError`` with advice, and whose
    arithmetic gives plain arrays."""

    _owner_op = "an op"

    def _guarded(name: str) -> Any:         # noqa: N805 - builds the methods below
        def write(self: "_SavedArray", *args: Any, **kwargs: Any) -> Any:
            if self.flags.writeable:        # a copy (astype, flatten, ...): its own memory
                return getattr(np.ndarray, name)(self, *args, **kwargs)
            return self._refuse()
        return write

    def copy(self, order: str = "C") -> np.ndarray:
        """A copy is new memory no backward saved: a plain, writable array."""
        return np.array(self.view(np.ndarray), order=order, copy=True)

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> np.ndarray:
        return self.view(np.ndarray).astype(dtype, *args, **kwargs)

    def _refuse(self, *args: Any, **kwargs: Any) -> None:
        raise SavedDataWriteError(
            f"(anomaly mode) this tensor's array is saved for the backward of {self._owner_op}, "
            f"which has not "
            f"run yet; writing into .data now would make that gradient silently wrong. Update "
            f"it with an in-place op that tinyattn counts, e.g. `with tinyattn.no_grad(): "
            f"x.sub_(delta)` or `x[...] = value` (a backward through the old graph then raises "
            f"instead of being wrong), call .backward() first, or change a copy: "
            f"x.detach().clone()")

    __setitem__ = _guarded("__setitem__")
    fill = _guarded("fill")
    sort = _guarded("sort")
    del _guarded

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        outs = kwargs.get("out", ())
        if any(isinstance(o, _SavedArray) and not o.flags.writeable for o in outs):
            self._refuse()
        if outs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, _SavedArray) else o
                                  for o in outs)
        inputs = tuple(i.view(np.ndarray) if isinstance(i, _SavedArray) else i for i in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        if isinstance(array, np.ndarray):
            array = array.view(np.ndarray)
            return array[()] if return_scalar else array
        return array


def _read_only_view(array: np.ndarray, op_name: str) -> np.ndarray:
    view = array.view(_SavedArray)
    view.flags.writeable = False
    view._owner_op = op_name
    return view
