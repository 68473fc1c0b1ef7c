"""Probes for exercises 19 and 20 of the engine track: a gradient check, and training.

As probes.py: each probe drives the module's engine on a scenario's data and returns plain
values. Imports nothing but NumPy, the standard library and probes.py (the child loads it
by path).
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

try:
    from .probes import _array, _describe
except ImportError:                             # run by runner.py as a script: plain import
    from probes import _array, _describe

__all__ = ["numeric_gradient", "gradcheck", "zero_grad", "sgd_step", "train_step",
           "GRADCHECK_CASES", "FUNCTIONS", "train_data"]

Values = Dict[str, Any]


# ------------------------------------------------------------------ 19 gradcheck
def _cubic(x: np.ndarray) -> float:
    return float((x ** 3 * np.linspace(0.5, 1.5, x.size).reshape(x.shape)).sum())


def _waves(x: np.ndarray) -> float:
    return float(np.sum(np.sin(3.0 * x) * np.exp(0.3 * x)))


def _coupled(x: np.ndarray) -> float:
    flat = x.reshape(-1)
    return float(np.sum(flat * np.roll(flat, 1)) + np.sum(flat ** 2) ** 1.5)


FUNCTIONS = {"cubic": _cubic, "waves": _waves, "coupled": _coupled}


def numeric_gradient(module: Any, data: Values) -> Values:
    x = data["x"].copy()
    before = x.copy()
    shapes_ok = [True]

    def f(array: Any) -> float:
        array = np.asarray(array)
        shapes_ok[0] = shapes_ok[0] and array.shape == before.shape
        return FUNCTIONS[data["function"]](array.astype(np.float64))

    grad = module.numeric_gradient(f, x)
    return {"grad": _array(grad), "x_unchanged": bool(np.array_equal(x, before)),
            "shapes_ok": shapes_ok[0]}


def _square_op(module: Any, t: Any, factor: float, last: float) -> Any:
    """t * t with a hand-made backward: 2 t g * factor, the last element's times ``last``."""
    def backward_fn(grad):
        d = 2.0 * t.data * grad * factor
        d.reshape(-1)[-1] *= last
        return (d,)
    return module.Tensor(t.data * t.data, (t,), backward_fn, "square")


# name -> (description, builder of f(t)); the reference says which ones are right
GRADCHECK_CASES = {
    "right_tanh": ("sum(tanh(x) * x), built from your engine's ops",
                   lambda m, t: m.sum_all(m.mul(m.tanh(t), t))),
    "right_matmul": ("sum((x @ W) * (x @ W)) for a fixed W",
                     lambda m, t: m.sum_all(m.mul(m.matmul(t, m.Tensor(_W)),
                                                 m.matmul(t, m.Tensor(_W))))),
    "right_large": ("sum(x * x) for x around 300, where the numeric gradient's round-off is "
                    "larger but still far inside rtol",
                    lambda m, t: m.sum_all(_square_op(m, t, 1.0, 1.0))),
    "wrong_factor": ("x * x whose backward lacks the 2 of d(x^2)/dx = 2x",
                     lambda m, t: m.sum_all(_square_op(m, t, 0.5, 1.0))),
    "wrong_sign": ("x * x whose backward has the wrong sign",
                   lambda m, t: m.sum_all(_square_op(m, t, -1.0, 1.0))),
    "wrong_small": ("x * x whose backward is 2% too large",
                    lambda m, t: m.sum_all(_square_op(m, t, 1.02, 1.0))),
    "wrong_last": ("x * x whose backward is wrong in the LAST element only",
                   lambda m, t: m.sum_all(_square_op(m, t, 1.0, 3.0))),
    "wrong_one_in_400": ("x * x (20 by 20) whose backward is 1.5% off in ONE element of 400",
                         lambda m, t: m.sum_all(_square_op(m, t, 1.0, 1.015))),
    "wrong_half_percent": ("x * x whose backward is 0.5% too large",
                           lambda m, t: m.sum_all(_square_op(m, t, 1.005, 1.0))),
    "right_zero": ("sum(x * x * x) at x = 0, where the right gradient is exactly 0 "
                   "and the numeric one about eps^2 = 1e-12",
                   lambda m, t: m.sum_all(m.mul(m.mul(t, t), t))),
    "right_huge": ("sum(x * x) for 100 x around 1e4, where the numeric gradient's round-off "
                   "is about 1e-5 relative",
                   lambda m, t: m.sum_all(_square_op(m, t, 1.0, 1.0))),
}
_W = np.array([[0.7, -1.2], [0.4, 0.9], [-0.3, 0.5]])


def gradcheck(module: Any, data: Values) -> Values:
    f = GRADCHECK_CASES[data["case"]][1]
    verdict = module.gradcheck(lambda t: f(module, t), data["x"].copy())
    values: Values = {"verdict": bool(verdict) if isinstance(verdict, (bool, np.bool_))
                      else _describe(verdict)}
    try:                                        # the numeric gradient its verdict rests on
        numeric = module.numeric_gradient(lambda a: float(np.asarray(
            f(module, module.Tensor(np.array(a, dtype=np.float64))).data)), data["x"].copy())
        values["numeric"] = _array(numeric)
    except Exception as error:  # the learner's numeric_gradient: its own part reports it
        values["numeric"] = f"an error ({type(error).__name__})"
    return values


# ------------------------------------------------------------------ 20 train
def _params(module: Any, data: Values) -> List[Any]:
    params = [module.Tensor(x.copy()) for x in data["data"]]
    for p, g in zip(params, data["grads"]):
        p.grad = None if g is None else g.copy()
    return params


def _cleared(g: Any, shape: tuple) -> bool:
    """None, a zero number (micrograd's p.grad = 0) or zeros of the parameter's shape."""
    if g is None:
        return True
    if isinstance(g, (int, float, np.integer, np.floating)) and not isinstance(g, bool):
        return g == 0
    return isinstance(g, np.ndarray) and g.shape in (shape, ()) and \
        g.dtype.kind in "iuf" and not np.any(g)


def zero_grad(module: Any, data: Values) -> Values:
    params = _params(module, data)
    module.zero_grad(params)
    return {"states": ["cleared" if _cleared(p.grad, p.data.shape) else _describe(p.grad)
                       for p in params]}


def sgd_step(module: Any, data: Values) -> Values:
    params = _params(module, data)
    kept = list(params)
    module.sgd_step(params, data["lr"])
    values: Values = {"same_objects": all(p is q for p, q in zip(params, kept))}
    for i, p in enumerate(kept):
        values[f"data_{i}"] = _array(p.data)
    return values


def train_data() -> Any:
    rng = np.random.default_rng(3)
    x = rng.uniform(-2.0, 2.0, size=(32, 2))
    y = np.sin(x[:, :1]) * np.cos(x[:, 1:])     # (32, 1)
    return x, y


def _grads_present(params: List[Any]) -> bool:
    return any(isinstance(p.grad, np.ndarray) and np.any(p.grad) for p in params)


def _watch_first_step(module: Any, model: Any, events: List[str]) -> Dict[str, Any]:
    """Replace the module's zero_grad, backward and sgd_step by wrappers that log what the
    first train_step does (a right train_step may inline them: the log only explains)."""
    saved = {name: getattr(module, name, None) for name in ("zero_grad", "backward",
                                                           "sgd_step")}

    def zero_grad(params):
        events.append("zero_grad")
        return saved["zero_grad"](params)

    def backward(root, grad=None):
        recorded = bool(tuple(getattr(root, "parents", ()) or ()))
        events.append("backward" if recorded else "backward of a loss with no graph")
        return saved["backward"](root, grad)

    def sgd_step(params, lr):
        before = [np.array(p.data, copy=True) for p in model.parameters()]
        grads = _grads_present(params)
        result = saved["sgd_step"](params, lr)
        moved = any(not np.array_equal(b, p.data) for b, p in zip(before, model.parameters()))
        events.append(f"sgd_step ({'with' if grads else 'without'} gradients, "
                      f"{'moved' if moved else 'moved nothing'})")
        return result

    for name, fn in (("zero_grad", zero_grad), ("backward", backward),
                     ("sgd_step", sgd_step)):
        if callable(saved[name]):
            setattr(module, name, fn)
    return saved


def train_step(module: Any, data: Values) -> Values:
    x, y = train_data()
    model = module.MLP(hidden=8, seed=0)
    initial = [np.array(p.data, copy=True) for p in model.parameters()]
    losses, events = [], []
    for step in range(data["steps"]):
        saved = _watch_first_step(module, model, events) if step == 0 else {}
        try:
            loss = module.train_step(model, x.copy(), y.copy(), data["lr"])
        finally:
            for name, fn in saved.items():
                setattr(module, name, fn)
        value = loss.data if isinstance(loss, module.Tensor) else loss
        losses.append(float(np.asarray(value)))
    params = model.parameters()
    values: Values = {"losses": np.array(losses), "first_step": events,
                      "moved": any(not np.array_equal(a, p.data)
                                   for a, p in zip(initial, params)),
                      "grads_after": _grads_present(params)}
    for i, p in enumerate(params):
        values[f"param_{i}"] = _array(p.data)
    return values
