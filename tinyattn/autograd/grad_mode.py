"""Grad modes and the per-thread switches every op reads: ``no_grad``, ``enable_grad``,
``inference_mode``, ``set_grad_enabled``, ``detect_anomaly``; the backward hook of
``tinyattn.viz.trace_backward`` and the module recording of ``tinyattn.viz.explore``.

The switches live in one thread-local object, ``_state``, read as plain attributes: every op
reads ``grad_enabled`` and ``anomaly``, so there is no getattr fallback on that path.
"""
from __future__ import annotations

import contextlib
import os
import threading
import traceback
from typing import Any, Iterator, List

__all__ = ["no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "is_grad_enabled",
           "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "set_backward_hook",
           "set_current_module"]


class _ThreadState(threading.local):
    """Per-thread switches; the class attributes are each new thread's defaults (read as
    plain attributes: every op checks them, so no getattr fallback on the hot path)."""

    grad_enabled = True
    anomaly = False
    backward_hook: Any = None      # set_backward_hook(); tinyattn.viz.trace_backward uses it
    module: Any = None             # the innermost nn.Module running its forward (Function.module)


_state = _ThreadState()
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # tinyattn/
_UNKNOWN_LINE = "an unknown line: its forward ran outside detect_anomaly()"


def is_grad_enabled() -> bool:
    return _state.grad_enabled


def _anomaly_enabled() -> bool:
    return _state.anomaly


class _GradMode:
    """``no_grad()``, ``enable_grad()`` and ``set_grad_enabled(mode)``: a context manager
    and a decorator, as in PyTorch."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self.previous: List[bool] = []

    def __enter__(self) -> None:
        self.previous.append(_state.grad_enabled)
        _state.grad_enabled = self.mode

    def __exit__(self, *exc: Any) -> None:
        _state.grad_enabled = self.previous.pop()

    def __call__(self, fn: Any) -> Any:
        mode = self.mode

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _GradMode(mode):
                return fn(*args, **kwargs)
        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapper


def no_grad(func: Any = None) -> Any:
    """Inside this block (or decorated function) no graph is recorded: for evaluation and
    parameter updates. ``@no_grad()`` and ``@no_grad`` both decorate, as in PyTorch."""
    return _GradMode(False) if func is None else _GradMode(False)(func)


def enable_grad(func: Any = None) -> Any:
    return _GradMode(True) if func is None else _GradMode(True)(func)


def inference_mode(mode: Any = True) -> Any:
    """PyTorch's ``inference_mode``: here the same as ``no_grad()`` (``mode=False``: recording
    on); also a decorator, with or without parentheses."""
    if callable(mode):
        return _GradMode(False)(mode)
    return _GradMode(not mode)


class set_grad_enabled(_GradMode):  # noqa: N801 - PyTorch's name
    """``set_grad_enabled(False)`` is ``no_grad()``; also callable as a plain function:
    ``set_grad_enabled(False)`` on its own line switches recording off until switched on."""

    def __init__(self, mode: bool):
        super().__init__(mode)
        self.previous.append(_state.grad_enabled)
        _state.grad_enabled = self.mode

    def __enter__(self) -> None:
        pass                      # already switched by __init__, as torch's does

    def __exit__(self, *exc: Any) -> None:
        _state.grad_enabled = self.previous.pop()

    def __call__(self, fn: Any) -> Any:
        # ``@set_grad_enabled(False)``: __init__ switched the mode for the line that made
        # the decorator; switch it back (as torch's) so only calls of ``fn`` run in it
        _state.grad_enabled = self.previous.pop()
        return super().__call__(fn)


def is_anomaly_enabled() -> bool:
    """``torch.is_anomaly_enabled()``: whether anomaly detection is on in this thread."""
    return _state.anomaly


class set_detect_anomaly:  # noqa: N801 - torch's name: a function that is also a context
    """``torch.autograd.set_detect_anomaly(mode)``: switch anomaly detection on or off now
    (as a call) or for a block (as a context manager, restoring the previous mode)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        if not check_nan:
            raise NotImplementedError("set_detect_anomaly(check_nan=False) is not implemented: "
                                      "tinyattn's anomaly mode always checks for NaN/Inf")
        self.previous = _state.anomaly
        _state.anomaly = bool(mode)

    def __enter__(self) -> None:
        pass                      # already switched by __init__, as torch's does

    def __exit__(self, *exc: Any) -> None:
        _state.anomaly = self.previous


@contextlib.contextmanager
def detect_anomaly(check_nan: bool = True) -> Iterator[None]:
    """Raise at the first op whose forward or backward makes NaN or Inf.

    The error names the op and the line of user code that created it. Slower: it checks
    every array and records a stack for every op, so use it while debugging only. It also
    makes ``.data`` of an array a pending backward saved read-only (tensor/saved_data.py):
    a write there, silent in torch, would make that gradient wrong.
    """
    if not check_nan:
        raise NotImplementedError("detect_anomaly(check_nan=False) is not implemented: "
                                  "tinyattn's anomaly mode always checks for NaN/Inf")
    previous = _anomaly_enabled()
    _state.anomaly = True
    try:
        yield
    finally:
        _state.anomaly = previous


def set_backward_hook(hook: Any) -> Any:
    """Call ``hook(fn, grad, input_grads)`` after each op's backward in this thread (None
    switches it off); returns the previous hook. For watching the engine work: see
    ``tinyattn.viz.trace_backward``. Off, it costs one attribute read per backward pass."""
    previous, _state.backward_hook = _state.backward_hook, hook
    return previous


def set_current_module(module: Any) -> Any:
    """Make ``module`` the one whose forward is running in this thread (``nn.Module.__call__``
    does it); each Function recorded meanwhile keeps it as ``fn.module``, so a graph can be
    grouped by module (``tinyattn.viz.explore``). Returns the previous one, to restore."""
    previous, _state.module = _state.module, module
    return previous


def _user_frame() -> str:
    """The innermost stack frame outside the tinyattn package, as 'file:line in func: code'."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if not os.path.abspath(frame.filename).startswith(_PACKAGE_DIR):
            return f"{frame.filename}:{frame.lineno} in {frame.name}: {frame.line}"
    return "<inside tinyattn>"
