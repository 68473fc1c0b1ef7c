"""Finite-difference gradient checking (docs/derivations.md#gradient-checking).

For f: inputs -> output, the analytic Jacobian row for output element m is the backward pass
with a one-hot gradient at m; the numeric column for input element n is the central difference

    (f(x + eps e_n) - f(x - eps e_n)) / (2 eps),

whose error is O(eps^2) from truncation plus about (machine epsilon * |f|) / eps from round-off.
In float64 (machine epsilon 2.2e-16) eps = 1e-6 balances the two near 1e-10; in float32
(1.2e-7) the round-off term alone is about 0.1, larger than most bugs, so float32 is refused.

``fast=True`` checks one random projection per input instead of the full Jacobian:
v^T J u, numerically (f(x + eps u) - f(x - eps u)) . v / (2 eps), against (J^T v) . u from one
backward pass: two forwards and one backward per input, whatever the size.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, List, Sequence, Tuple

import numpy as np

from . import backend
from .autograd import no_grad
from .tensor import Tensor
from .precision import is_floating

__all__ = ["gradcheck", "gradcheck_report", "GradcheckError", "GradcheckReport", "InputReport"]


class GradcheckError(AssertionError):
    """A gradient check failed; ``.report`` holds the details."""

    def __init__(self, report: "GradcheckReport"):
        super().__init__(str(report))
        self.report = report


@dataclass
class InputReport:
    """The comparison for one input that requires a gradient."""

    index: int
    shape: Tuple[int, ...]
    analytic: np.ndarray            # (M, N) Jacobian, or (1,) projection when fast
    numeric: np.ndarray
    atol: float
    rtol: float
    fast: bool
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    num_failing: int = 0
    worst_input_index: Tuple[int, ...] = ()
    worst_output_index: Tuple[int, ...] = ()
    worst_analytic: float = 0.0
    worst_numeric: float = 0.0
    worst_abs_error: float = 0.0    # the worst entry's own errors (max_*: over all entries)
    worst_rel_error: float = 0.0
    output_shape: Tuple[int, ...] = ()

    def __post_init__(self) -> None:
        diff = np.abs(self.analytic - self.numeric)
        bound = self.atol + self.rtol * np.abs(self.numeric)
        failing = ~(diff <= bound)  # NaN on either side fails: NaN <= x is False
        self.num_failing = int(failing.sum())
        if diff.size:
            excess = np.where(np.isnan(diff), np.inf, diff - bound)
            flat = int(np.argmax(excess))
            rel = diff / np.maximum(np.abs(self.numeric), 1e-12)
            self.max_abs_error = float(diff.max())
            self.max_rel_error = float(rel.max())
            self.worst_analytic = float(self.analytic.reshape(-1)[flat])
            self.worst_numeric = float(self.numeric.reshape(-1)[flat])
            self.worst_abs_error = float(diff.reshape(-1)[flat])
            self.worst_rel_error = float(rel.reshape(-1)[flat])
            if not self.fast:
                m, n = np.unravel_index(flat, self.analytic.shape)
                self.worst_output_index = tuple(int(i) for i in
                                                np.unravel_index(m, self.output_shape or (1,)))
                self.worst_input_index = tuple(int(i) for i in np.unravel_index(n, self.shape))

    @property
    def passed(self) -> bool:
        return (self.num_failing == 0 and bool(np.isfinite(self.analytic).all())
                and bool(np.isfinite(self.numeric).all()))

    def describe(self) -> str:
        total = self.analytic.size
        if self.passed:
            return (f"input {self.index} {self.shape}: ok (max abs error "
                    f"{self.max_abs_error:.2e}, max rel error {self.max_rel_error:.2e})")
        if self.fast:
            where = "random projection v^T J u"
        else:
            where = (f"worst element: input{list(self.worst_input_index)} -> "
                     f"output{list(self.worst_output_index)}")
        return (f"input {self.index} {self.shape}: gradient WRONG. {where}: analytic "
                f"{self.worst_analytic:.6g} vs numeric {self.worst_numeric:.6g} (abs error "
                f"{self.worst_abs_error:.2e}, rel error {self.worst_rel_error:.2e}); "
                f"{self.num_failing} of {total} Jacobian entries outside atol={self.atol:g}, "
                f"rtol={self.rtol:g} (max abs error {self.max_abs_error:.2e}, max rel error "
                f"{self.max_rel_error:.2e})")


@dataclass
class GradcheckReport:
    inputs: List[InputReport] = field(default_factory=list)
    unexpected_grads: List[int] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.unexpected_grads and all(r.passed for r in self.inputs)

    @property
    def max_abs_error(self) -> float:
        return max((r.max_abs_error for r in self.inputs), default=0.0)

    @property
    def max_rel_error(self) -> float:
        return max((r.max_rel_error for r in self.inputs), default=0.0)

    def __str__(self) -> str:
        lines = [("gradcheck passed" if self.passed else "gradcheck FAILED")]
        lines += ["  " + r.describe() for r in self.inputs]
        for i in self.unexpected_grads:
            lines.append(f"  input {i} has requires_grad=False but received a gradient")
        return "\n".join(lines)


def _float64_check(inputs: Sequence[Any]) -> None:
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor) and x.requires_grad and x.dtype != np.float64:
            raise TypeError(
                f"gradcheck: input {i} is {x.dtype}, but finite differences need float64. In "
                f"float32 the round-off in (f(x+eps) - f(x-eps)) / (2 eps) is about "
                f"1e-7 * |f| / eps, around 0.1 for eps=1e-6, which hides real bugs. Pass "
                f"x.double() (and a float64 model).")


def _output(fn: Callable[..., Tensor], inputs: Sequence[Any]) -> Tensor:
    out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    return out


def _evaluate(fn: Callable[..., Tensor], inputs: Sequence[Any]) -> np.ndarray:
    with no_grad():
        return backend.to_host(_output(fn, inputs)._data).astype(np.float64).reshape(-1)


def _clear_grads(inputs: Sequence[Any]) -> None:
    for x in inputs:
        if isinstance(x, Tensor):
            x.grad = None


def _analytic_rows(fn, inputs, out_grads: List[Any]) -> List[List[np.ndarray]]:
    """For each output gradient, the input gradients (one backward each)."""
    rows = []
    for out_grad in out_grads:
        _clear_grads(inputs)
        out = _output(fn, inputs)
        out.backward(out_grad)
        # An input that gets no gradient has a zero analytic row: if f really depends on it,
        # the numeric Jacobian is not zero and the check fails there, naming the input.
        rows.append([np.zeros(x.numel()) if x.grad is None
                     else backend.to_host(x.grad._data).ravel()
                     for x in inputs if isinstance(x, Tensor) and x.requires_grad])
    return rows


def gradcheck_report(fn: Callable[..., Tensor], inputs: Sequence[Any], *, eps: float = 1e-6,
                     atol: float = 1e-5, rtol: float = 1e-3, fast: bool = False,
                     seed: int = 0) -> GradcheckReport:
    """Run the check and return the full report (``gradcheck`` wraps this)."""
    _float64_check(inputs)
    inputs = list(inputs)
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input has requires_grad=True, so there is nothing to "
                         "check; create inputs with requires_grad=True")
    with no_grad():
        probe = _output(fn, inputs)
    out_shape, out_size = probe.shape, probe.numel()
    xp = backend.get_array_module(probe._data)
    rng = np.random.default_rng(seed)
    report = GradcheckReport()

    # Inputs that do not require a gradient must not receive one.
    _clear_grads(inputs)
    if is_floating(probe.dtype):
        out = _output(fn, inputs)
        if out.requires_grad:
            out.backward(xp.ones(out.shape, dtype=out.dtype))
        report.unexpected_grads = [i for i, x in enumerate(inputs) if isinstance(x, Tensor)
                                   and not x.requires_grad and x.grad is not None]

    if fast:
        v_host = rng.standard_normal(out_size)
        v = backend.to_device(v_host.reshape(out_shape).astype(probe.dtype), probe.device)
        analytic_grads = _analytic_rows(fn, inputs, [v])[0]
    else:
        eye = np.eye(out_size)
        grads = [backend.to_device(eye[m].reshape(out_shape).astype(probe.dtype), probe.device)
                 for m in range(out_size)]
        rows = _analytic_rows(fn, inputs, grads)

    for k, i in enumerate(checked):
        x = inputs[i]
        data = x._data
        if fast:
            u_host = rng.standard_normal(x.shape)
            u = backend.to_device(u_host, x.device)
            original = data.copy()
            x._data = original + eps * u
            plus = _evaluate(fn, inputs)
            x._data = original - eps * u
            minus = _evaluate(fn, inputs)
            x._data = original
            numeric = np.array([(plus - minus) @ v_host / (2 * eps)])
            analytic = np.array([float(analytic_grads[k] @ u_host.ravel())])
        else:
            numeric = np.zeros((out_size, x.numel()))
            x._data = data = xp.ascontiguousarray(data).reshape(data.shape)  # keeps 0-d as 0-d
            flat = data.reshape(-1)  # a view of a contiguous array: writing it perturbs x
            for n in range(x.numel()):
                saved = flat[n].copy()
                flat[n] = saved + eps
                plus = _evaluate(fn, inputs)
                flat[n] = saved - eps
                minus = _evaluate(fn, inputs)
                flat[n] = saved
                numeric[:, n] = (plus - minus) / (2 * eps)
            analytic = np.stack([row[k] for row in rows]) if rows else numeric * 0
        report.inputs.append(InputReport(i, x.shape, analytic, numeric, atol, rtol, fast,
                                         output_shape=out_shape))
    _clear_grads(inputs)
    return report


def gradcheck(fn: Callable[..., Tensor], inputs: Sequence[Any], *, eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3, fast: bool = False,
              raise_exception: bool = True) -> bool:
    """Compare ``fn``'s backward with central finite differences, in float64.

    ``inputs`` are the arguments of ``fn``; those with ``requires_grad=True`` are checked
    (they must be float64), the others (ids, masks) are passed through and must receive no
    gradient. Returns True on success; on failure raises ``GradcheckError`` whose message
    names, per input, the worst element, analytic and numeric values, the errors and how many
    entries fail (or returns False with ``raise_exception=False``).
    """
    report = gradcheck_report(fn, inputs, eps=eps, atol=atol, rtol=rtol, fast=fast)
    if not report.passed and raise_exception:
        raise GradcheckError(report)
    return report.passed

