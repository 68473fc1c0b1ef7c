"""PyTorch's memory formats: ``contiguous_format``, ``preserve_format``, ``channels_last`` and
``channels_last_3d``, accepted wherever torch takes ``memory_format=``.

A tinyattn tensor's memory is always row-major (NumPy's C order), so a memory format changes
no value: every op gives the same numbers whatever layout is asked for. What it still checks
is what torch checks: ``channels_last`` needs a 4-d tensor and ``channels_last_3d`` a 5-d one
(torch raises "required rank 4 tensor to use channels_last format"), and ``contiguous()``
refuses ``preserve_format``.
"""
from __future__ import annotations

from typing import Any, Tuple

__all__ = ["memory_format", "contiguous_format", "preserve_format", "channels_last",
           "channels_last_3d", "check_memory_format"]


class memory_format(str):  # noqa: N801 - PyTorch's name
    """A memory format: its name, printed as torch prints it (``torch.channels_last``)."""

    def __repr__(self) -> str:
        return f"torch.{str.__str__(self)}"

    __str__ = __repr__


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_RANK = {channels_last: 4, channels_last_3d: 5}


def check_memory_format(shape: Tuple[int, ...], fmt: Any, op: str,
                        allow_preserve: bool = True) -> None:
    """Raise as torch does for a memory format that cannot apply to a tensor of ``shape``."""
    if fmt is None:
        return
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}: memory_format must be one of torch.contiguous_format, "
                        f"torch.preserve_format, torch.channels_last, "
                        f"torch.channels_last_3d; got {fmt!r}")
    if fmt == preserve_format and not allow_preserve:
        raise RuntimeError(f"{op}: preserve memory format is unsupported by the contiguous "
                           f"operator (pass torch.contiguous_format or nothing)")
    rank = _RANK.get(fmt)
    if rank is not None and len(shape) != rank:
        raise RuntimeError(f"{op}: required rank {rank} tensor to use {str.__str__(fmt)} "
                           f"format, got a {len(shape)}-d tensor of shape {tuple(shape)}")
