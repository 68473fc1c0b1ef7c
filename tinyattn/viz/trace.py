"""``trace_backward``: print the backward engine's walk, one op at a time.

    with tinyattn.viz.trace_backward():
        loss.backward()

prints, in the order the engine calls them, each op's backward with the shape and 2-norm (or
the value, for one element) of the gradient that reaches the op's output (summed over every
path that reached it: the engine calls each op once, when all its consumers are done) and of
the gradient it sends to each input, and where that goes (the op that made the input, or a
leaf's ``.grad``). Ops are named ``Name#k``, numbered in the order the walk first reaches
them (the output's op is #1).

It uses ``tinyattn.autograd.set_backward_hook``, so it works for ``backward()`` and
``tinyattn.autograd.grad`` alike, only in the thread that entered it. Norms are computed in
float64 on the host, so tracing a GPU run copies every gradient: use it on small graphs.
"""
from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, TextIO, Tuple

import numpy as np

from .. import autograd, backend
from .graph import op_name, tensor_names

__all__ = ["trace_backward", "BackwardTrace", "TraceStep", "Flow"]


@dataclass
class Flow:
    """The gradient one op's backward sends to one of its inputs."""

    position: int                     # which input of the op
    shape: Tuple[int, ...]
    norm: Optional[float]             # None: no gradient (the input does not need one)
    to: str                           # "Mul#3", or "leaf w (.grad)", or "nothing"
    value: Optional[float] = None     # the gradient itself, when it has one element


@dataclass
class TraceStep:
    """One call of an op's backward by the engine."""

    step: int                         # 1, 2, ... in call order
    op: str                           # "Mul"
    label: str                        # "Mul#3"
    grad_shape: Tuple[int, ...]
    grad_dtype: str
    grad_norm: float
    contributions: int                # how many paths' gradients were summed into it
    flows: List[Flow] = field(default_factory=list)
    grad_value: Optional[float] = None    # the gradient itself, when it has one element


def _norm_and_value(array: Any) -> Tuple[float, Optional[float]]:
    """The 2-norm (float64, on the host) and, for a one-element array, the value itself."""
    array = np.asarray(backend.to_host(array), dtype=np.float64)
    value = float(array.ravel()[0]) if array.size == 1 else None
    return float(np.linalg.norm(array.ravel())), value


def _describe(shape: Tuple[int, ...], norm: float, value: Optional[float]) -> str:
    return f"{shape} = {value:.4g}" if value is not None else f"{shape} norm {norm:.4g}"


class BackwardTrace:
    """What ``trace_backward`` recorded: ``steps`` (TraceSteps in call order); ``str()`` of
    it is the printed table. Also a hook for ``autograd.set_backward_hook``."""

    def __init__(self, file: Optional[TextIO] = None, params: Any = None,
                 echo: bool = True):
        self.steps: List[TraceStep] = []
        self.file, self.echo = file, echo
        self._names = tensor_names(params)
        self._labels: Dict[int, str] = {}
        self._keep: List[Any] = []        # the labelled Functions, so no id is reused
        self._arrivals: Dict[int, int] = {}
        self._lines: List[str] = []

    def _label(self, fn: Any) -> str:
        if id(fn) not in self._labels:
            self._labels[id(fn)] = f"{op_name(fn)}#{len(self._labels) + 1}"
            self._keep.append(fn)
        return self._labels[id(fn)]

    def _leaf(self, t: Any) -> str:
        name = self._names.get(id(t))
        return f"leaf {name}" if name else f"leaf {tuple(t.shape)}"

    def __call__(self, fn: Any, grad: Any, input_grads: Tuple[Any, ...]) -> None:
        norm, value = _norm_and_value(grad)
        step = TraceStep(len(self.steps) + 1, op_name(fn), self._label(fn),
                         tuple(grad.shape), str(grad.dtype), norm,
                         max(self._arrivals.pop(id(fn), 1), 1), grad_value=value)
        for position, (t, parent, needed) in enumerate(zip(fn.inputs, fn.parents,
                                                           fn.needs_input_grad)):
            g = input_grads[position] if position < len(input_grads) else None
            if g is None or not needed:
                step.flows.append(Flow(position, tuple(t.shape), None, "nothing"))
                continue
            if parent is None:
                to = f"{self._leaf(t)} (.grad)"
            else:
                to = self._label(parent)
                self._arrivals[id(parent)] = self._arrivals.get(id(parent), 0) + 1
            norm, value = _norm_and_value(g)
            step.flows.append(Flow(position, tuple(g.shape), norm, to, value))
        self.steps.append(step)
        self._print(step)

    def _print(self, step: TraceStep) -> None:
        if not self._lines:
            self._emit(f"{'step':>4}  {'backward of':<16} {'grad of its output':<30} "
                       f"grads it sends to its inputs")
        summed = f", sum of {step.contributions}" if step.contributions > 1 else ""
        incoming = _describe(step.grad_shape, step.grad_norm, step.grad_value) + summed
        lead = f"{step.step:>4}  {step.label:<16} {incoming:<30} "
        for i, flow in enumerate(step.flows):
            if flow.norm is None:
                out = f"[{flow.position}] none (does not require grad)"
            else:
                out = (f"[{flow.position}] {_describe(flow.shape, flow.norm, flow.value)} "
                       f"-> {flow.to}")
            self._emit((lead if i == 0 else " " * len(lead)) + out)
        if not step.flows:
            self._emit(lead)

    def _emit(self, line: str) -> None:
        self._lines.append(line)
        if self.echo:
            print(line, file=self.file or sys.stdout)

    def __str__(self) -> str:
        return "\n".join(self._lines)

    def ops(self) -> List[str]:
        """The op labels in call order, e.g. ['Sum#1', 'Add#2', ...]."""
        return [s.label for s in self.steps]


@contextlib.contextmanager
def trace_backward(file: Optional[TextIO] = None, params: Any = None,
                   echo: bool = True) -> Iterator[BackwardTrace]:
    """Print (to ``file``, default standard output; nothing with ``echo=False``) every op's
    backward the engine runs inside the block; yields the ``BackwardTrace``. ``params``
    names leaves, as in ``draw_graph`` (a model or ``{name: tensor}``)."""
    trace = BackwardTrace(file=file, params=params, echo=echo)
    previous = autograd.set_backward_hook(trace)
    try:
        yield trace
    finally:
        autograd.set_backward_hook(previous)
