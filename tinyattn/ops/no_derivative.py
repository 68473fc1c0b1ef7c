"""Ops whose values torch records in the graph without a derivative: ``unique`` and
``unique_consecutive`` of a tensor that requires grad give values with ``requires_grad=True``
and a node (``Unique2Backward0``, ``UniqueDimBackward0``, ``UniqueConsecutiveBackward0``)
whose backward raises torch's NotImplementedError. Following that keeps a program's
``requires_grad`` checks as in torch, and a backward through them fails loudly, as in torch.
"""
from __future__ import annotations

from typing import Any

from ..autograd import Function
from ..tensor import Tensor

__all__ = ["record_without_derivative"]


class NoDerivative(Function):
    """Forward: the values already computed (from ``x``). Backward: torch's error."""

    torch_op = ""

    def forward(self, x, *, values):
        return values

    def backward(self, grad):
        raise NotImplementedError(f"the derivative for '{self.torch_op}' is not implemented.")


class Unique2(NoDerivative):
    torch_op = "_unique2"


class UniqueDim(NoDerivative):
    torch_op = "unique_dim"


class UniqueConsecutive(NoDerivative):
    torch_op = "unique_consecutive"


_NODES = {node.torch_op: node for node in (Unique2, UniqueDim, UniqueConsecutive)}


def record_without_derivative(torch_op: str, values: Tensor, source: Tensor) -> Tensor:
    """``values`` as a graph node on ``source`` when recording (``source`` requires grad and
    grad mode is on): ``requires_grad=True``, a backward that raises. Otherwise ``values``."""
    node: Any = _NODES[torch_op]
    return node.apply(source, values=values._data)
