"""torch's ``*_copy`` ops (``expand_copy``, ``permute_copy``, ``unbind_copy``, ...: the view
op's result as a new tensor that shares no memory with its input) and a few small views
(``ravel``, ``positive``, ``msort``, ``H``, ``mH``/``adjoint``, ``sum_to_size``).

Each is the named op followed by ``clone`` (or a composition of existing ops), so its
gradient is that op's backward: a copy passes the gradient through unchanged
(docs/derivations.md#structure-ops-made-of-shape-ops).
"""
from __future__ import annotations

from typing import Any, Callable, Tuple

import inspect

import numpy as np

from ..autograd import name_node
from ..tensor import Tensor
from .compare import sort
from .elementwise import clone
from .layout import contiguous, expand, mT, t, view
from .picks import unfold
from .rearrange import diagonal, unbind
from .reduce import sum as _sum
from .shape import permute, reshape, squeeze, transpose, unsqueeze
from .structure import split_with_sizes
from .complex_numbers import conj as _conj

__all__ = ["expand_copy", "diagonal_copy", "alias_copy", "view_copy", "permute_copy",
           "split_with_sizes_copy", "unbind_copy", "unfold_copy", "squeeze_copy",
           "unsqueeze_copy", "transpose_copy", "t_copy", "ravel", "positive", "msort", "H",
           "mH", "adjoint", "sum_to_size", "renorm", "renorm_"]


def _copied(op: Callable[..., Any], name: str) -> Callable[..., Any]:
    """torch.<name>: ``op`` whose result (each result, for a tuple) is cloned."""
    def copy_op(input: Tensor, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        out = op(input, *args, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(_copy_of(piece, input) for piece in out)
        return _copy_of(out, input)
    copy_op.__name__ = copy_op.__qualname__ = name
    copy_op.__signature__ = inspect.signature(op)         # type: ignore[attr-defined]
    copy_op.__doc__ = f"``torch.{name}``: ``{op.__name__}`` as a new tensor (a clone)."
    return copy_op


def _copy_of(view: Tensor, input: Tensor) -> Tensor:  # noqa: A002
    """A clone of the view, named as torch names a ``*_copy`` op's node: the view op's node
    with ``_copy`` (``TransposeBackward0_copy``; alias_copy: ``AliasBackward0_copy``)."""
    copy = clone(view)
    if copy._ctx is not None:
        made = view._ctx if view is not input and view._ctx is not None else None
        name_node(copy, (made.name() if made is not None else "AliasBackward0") + "_copy")
    return copy


def _expand(input: Tensor, size: Any, *, implicit: bool = False) -> Tensor:  # noqa: A002
    return expand(input, tuple(size))


def _view(input: Tensor, size: Any = None, *, dtype: Any = None) -> Tensor:  # noqa: A002
    if dtype is not None:
        return input.view(dtype)
    if isinstance(size, Tensor):      # torch's view_copy takes a size or a dtype, not a tensor
        raise TypeError("view_copy() received an invalid combination of arguments - got "
                        "(Tensor, Tensor), but expected one of: (Tensor input, torch.dtype "
                        "dtype) or (Tensor input, tuple of ints size); pass "
                        "tuple(t.tolist()) for a size held in a tensor")
    if isinstance(size, (str, np.dtype)) or (isinstance(size, type) and
                                             issubclass(size, np.generic)):
        return input.view(size)
    return view(input, tuple(size) if isinstance(size, (list, tuple)) else size)


def _permute(input: Tensor, dims: Any) -> Tensor:  # noqa: A002
    return permute(input, *dims)


def _squeeze(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    return squeeze(input, dim)


def _alias(input: Tensor) -> Tensor:  # noqa: A002
    return input


expand_copy = _copied(_expand, "expand_copy")
diagonal_copy = _copied(diagonal, "diagonal_copy")
alias_copy = _copied(_alias, "alias_copy")
view_copy = _copied(_view, "view_copy")
permute_copy = _copied(_permute, "permute_copy")
split_with_sizes_copy = _copied(split_with_sizes, "split_with_sizes_copy")
unbind_copy = _copied(unbind, "unbind_copy")
unfold_copy = _copied(unfold, "unfold_copy")
squeeze_copy = _copied(_squeeze, "squeeze_copy")
unsqueeze_copy = _copied(unsqueeze, "unsqueeze_copy")
transpose_copy = _copied(transpose, "transpose_copy")
t_copy = _copied(t, "t_copy")


def ravel(input: Tensor) -> Tensor:  # noqa: A002 - torch's name
    """``torch.ravel``: input flattened to a contiguous 1-D tensor, a view only where the
    input is contiguous (as torch: a uniformly strided input, ``x[..., ::2]``, which reshape
    would view, is copied)."""
    return reshape(contiguous(input), (-1,))


def positive(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.positive``: input itself (+x); refused for bool tensors, as in torch."""
    if input.dtype == np.bool_:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


def msort(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.msort``: the values of ``sort`` along dim 0."""
    return sort(input, 0)[0]


def H(input: Tensor) -> Tensor:  # noqa: N802 - torch's name
    """``x.H``: the conjugate transpose of a matrix (0-D or 2-D; real tensors: ``x.T``)."""
    if input.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{input.ndim}-D tensor.")
    out = transpose(input, 0, 1) if input.ndim == 2 else input   # torch: TransposeBackward0
    return _conj(out) if out.dtype.kind == "c" else out


def mH(input: Tensor) -> Tensor:  # noqa: N802 - torch's name
    """``x.mH`` (``x.adjoint()``): each matrix conjugate-transposed (real tensors: ``x.mT``)."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {input.ndim}-D tensor.")
    out = mT(input)
    return _conj(out) if out.dtype.kind == "c" else out


adjoint = mH


def sum_to_size(input: Tensor, *sizes: Any, size: Any = None) -> Tensor:  # noqa: A002
    """``x.sum_to_size(*size)``: x summed down to ``size``, which x must expand from (the
    backward of broadcasting, as an op): leading dims summed away, size-1 dims kept."""
    if size is not None:
        sizes = (size,)
    shape: Tuple[int, ...] = tuple(sizes[0]) if len(sizes) == 1 and isinstance(
        sizes[0], (list, tuple)) else tuple(sizes)
    lead = input.ndim - len(shape)
    if lead < 0 or any(n != 1 and n != m for n, m in zip(shape, input.shape[lead:])):
        raise RuntimeError(f"size {list(shape)} is not expandable to size "
                           f"{list(input.shape)}.")
    if shape == input.shape and input.ndim:
        return input                     # nothing to sum (torch returns input itself)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and input.shape[lead + i] != 1)
    if not lead and not axes:            # a 0-d input: torch still sums (ints -> int64)
        return _sum(input)
    out = _sum(input, tuple(range(lead))) if lead else input
    return _sum(out, axes, keepdim=True) if axes else out


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:  # noqa: A002
    """``torch.renorm``: each slice of input along ``dim`` whose p-norm (over all the other
    dims) exceeds ``maxnorm`` scaled down to norm maxnorm: x * maxnorm / (norm + 1e-7), the
    others unchanged. Built of norm, div, masked_fill and mul, so the gradient also flows
    through the norm of a rescaled slice, as torch's renorm_backward computes it."""
    from .masking import masked_fill
    from .elementwise import div, mul
    from .logic import le
    from .stats import norm
    from .shape import _normalize_dim
    if not isinstance(input, Tensor):
        raise TypeError(f"renorm(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype.kind not in "fV":
        raise RuntimeError(f"renorm: expected a floating tensor, got {input.dtype}")
    if float(maxnorm) < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if float(p) <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported (p = {p})")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    axis = _normalize_dim(int(dim), input.ndim, "renorm")
    others = tuple(d for d in range(input.ndim) if d != axis)
    norms = norm(input, float(p), others, keepdim=True)             # (1, .., n_dim, .., 1)
    factor = masked_fill(div(float(maxnorm), norms + 1e-7), le(norms, float(maxnorm)), 1.0)
    return mul(input, factor)


def renorm_(x: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """``Tensor.renorm_``: ``renorm`` written into x."""
    from .inplace import _in_place
    return _in_place(x, "renorm_", lambda t: renorm(t, p, dim, maxnorm))
