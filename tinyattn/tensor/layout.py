"""PyTorch's tensor layouts: ``torch.strided`` (every tinyattn tensor) and the sparse and
other layouts torch names (``sparse_coo``, ``sparse_csr``, ...), which tinyattn does not have.

The factories take ``layout=`` as torch's do: ``None`` or ``torch.strided`` give the usual
dense tensor; another layout is refused loudly (NotImplementedError naming it: a dense tensor
in its place would differ silently, e.g. ``x.is_sparse``); anything that is not a layout is
torch's TypeError. ``pin_memory=True`` is torch's RuntimeError on a machine without an
accelerator, and accepted (nothing to change in the values) where CuPy has a GPU.
"""
from __future__ import annotations

from typing import Any

from ..backend import cuda_is_available

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
           "sparse_bsc", "jagged", "check_layout", "check_pin_memory"]


class layout(str):  # noqa: N801 - PyTorch's name
    """A tensor layout: its name, printed as torch prints it (``torch.strided``)."""

    def __repr__(self) -> str:
        return f"torch.{str.__str__(self)}"

    __str__ = __repr__


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")
_mkldnn = layout("_mkldnn")


def check_layout(value: Any, op: str) -> None:
    """Accept ``None`` and ``torch.strided``; refuse the others as described above."""
    if value is None or value is strided:
        return
    if not isinstance(value, layout):
        raise TypeError(f"{op}(): argument 'layout' must be torch.layout, not "
                        f"{type(value).__name__}")
    if value == strided:
        return
    raise NotImplementedError(f"{op}(): layout={value!r} is not implemented: tinyattn's "
                              f"tensors are all dense (torch.strided); pass "
                              f"layout=torch.strided or leave layout out")


def check_pin_memory(value: Any, op: str) -> None:
    """``pin_memory=True`` needs an accelerator, as in torch; False/None always pass."""
    if not value:
        return
    if not cuda_is_available():
        raise RuntimeError(f"{op}(): pin_memory=True requires a CUDA or other accelerator "
                           f"backend; no pinned memory allocator is available on this system "
                           f"(pass pin_memory=False)")
