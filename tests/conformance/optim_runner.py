"""One OptimizerInfo entry of torch's optim_db run through torch and tinyattn.

For an optimizer tinyattn has by torch's name (``torch.optim.Adam`` under run-torch), each
constructor variant of the entry's ``optim_inputs_func`` (its ``kwargs``: ``lr``,
``weight_decay``, ``amsgrad``, ``maximize``, a tensor ``lr``, ...) builds the optimizer in
both over the same small model (float64): a weight (3, 4) and a bias (3,), the loss
``mean((tanh(x W^T + b) - y)^2)`` on fixed data. Each framework computes its own gradients;
after every one of ``STEPS`` steps the parameters must agree (torch.testing's float64
tolerances). Where the entry supports parameter groups, one more case puts the weight and
the bias in two groups, the bias's with its own ``lr`` and ``weight_decay``. An optimizer
that takes matrices only (``MATRICES_ONLY``: Muon refuses any other parameter) gets the same
bias as a (1, 3) row, which broadcasts to the same loss.

``check_trajectory`` returns None when tinyattn agrees, else a one-line description of the
first difference (which step, which parameter). After the trajectory it compares the two
optimizers' ``state_dict()`` structure (each group's keys in order with their types and
values; each parameter's state entries in order, a tensor by dtype and shape, a number by
type) and ``repr(optimizer)`` (what ``print(optimizer)`` shows), then loads torch's state dict
into tinyattn and checks that loading and saving gives the same structure back.
"""
from __future__ import annotations

import copy

import dataclasses
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

import tinyattn

from . import op_runner as R
from .convert import Converter, Unconvertible, assert_agrees
from .torch_names import resolve

__all__ = ["OptimEntry", "STEPS", "optimizer_inputs", "check_trajectory", "check_state_dict",
           "PARAM_GROUPS"]

STEPS = 6
MATRICES_ONLY = frozenset({"Muon"})     # torch's constructor refuses parameters not 2-D
PARAM_GROUPS = "two param groups (harness)"   # the desc of the harness's own group case


@dataclasses.dataclass
class OptimEntry:
    info: Any
    key: str                          # "Adam"
    tiny_class: Optional[type]

    @property
    def present(self) -> bool:
        return self.tiny_class is not None

    @classmethod
    def build(cls, info: Any) -> "OptimEntry":
        name = info.optim_cls.__name__
        found = resolve(f"optim.{name}")
        return cls(info, name, found if isinstance(found, type) else None)


@dataclasses.dataclass
class GroupsInput:
    """The harness's own constructor variant: weight and bias in two parameter groups."""
    kwargs: Dict[str, Any]
    desc: str = PARAM_GROUPS
    params: Any = None


def optimizer_inputs(info: Any) -> List[Any]:
    """torch's constructor variants for the entry (float64), plus the two-group case."""
    with R.quiet():
        inputs = list(info.optim_inputs_func(device="cpu", dtype=torch.float64))
    if info.supports_param_groups:
        inputs.append(GroupsInput({}))
    return inputs


def _data(matrices_only: bool = False) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(R.SEED)
    bias = rng.standard_normal(3)
    return {"weight": rng.standard_normal((3, 4)),
            "bias": bias.reshape(1, 3) if matrices_only else bias,
            "x": rng.standard_normal((8, 4)), "y": rng.standard_normal((8, 3)) * 0.5}


def _loss(weight: Any, bias: Any, x: Any, y: Any) -> Any:
    out = (x @ weight.transpose(0, 1) + bias).tanh()        # (8, 4) @ (4, 3) -> (8, 3)
    return ((out - y) ** 2).mean()


def _groups(optim_input: Any, weight: Any, bias: Any) -> Any:
    if isinstance(optim_input, GroupsInput):
        return [{"params": [weight]},
                {"params": [bias], "lr": 0.02, "weight_decay": 0.05}]
    return [weight, bias]


def _run(framework: Any, cls: Any, optim_input: Any, kwargs: Dict[str, Any],
         closure_needed: bool) -> Tuple[List[List[np.ndarray]], Any]:
    """The parameters after each step, as float64 arrays, and the optimizer."""
    data = _data(cls.__name__ in MATRICES_ONLY)
    make = (lambda a, grad=False: torch.tensor(a, dtype=torch.float64, requires_grad=grad)) \
        if framework is torch else \
        (lambda a, grad=False: tinyattn.tensor(a, dtype="float64", requires_grad=grad))
    weight, bias = make(data["weight"], True), make(data["bias"], True)
    x, y = make(data["x"]), make(data["y"])
    optimizer = cls(_groups(optim_input, weight, bias), **kwargs)
    trajectory = []

    def closure() -> Any:
        optimizer.zero_grad()
        loss = _loss(weight, bias, x, y)
        loss.backward()
        return loss

    for _ in range(STEPS):
        if closure_needed:
            optimizer.step(closure)
        else:
            closure()
            optimizer.step()
        trajectory.append([np.array(p.detach().numpy(), dtype=np.float64)
                           for p in (weight, bias)])
    return trajectory, optimizer


def _describe(value: Any, with_value: bool) -> Any:
    """A framework-neutral description of a state-dict value: tensors by dtype and shape,
    numbers by type (and value in param_groups, where both hold the same kwargs)."""
    if isinstance(value, (torch.Tensor, tinyattn.Tensor)):
        return ("tensor", str(value.dtype).replace("torch.", ""), tuple(value.shape))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_describe(v, with_value) for v in value))
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return (type(value).__name__, value) if with_value else type(value).__name__
    return type(value).__name__


def _structure(state_dict: Dict[str, Any]) -> Dict[str, Any]:
    groups = [[(k, _describe(v, True)) for k, v in group.items()]
              for group in state_dict["param_groups"]]
    state = {i: [(k, _describe(v, False)) for k, v in entries.items()]
             for i, entries in state_dict["state"].items()}
    return {"param_groups": groups, "state": state}


def _first_difference(ours: Any, theirs: Any, where: str) -> Optional[str]:
    """The first entry in which two structures differ, named by its path."""
    if ours == theirs:
        return None
    if isinstance(ours, dict) and isinstance(theirs, dict):
        if list(ours) != list(theirs):
            return f"{where} keys: tinyattn {list(ours)}, torch {list(theirs)}"
        for key in ours:
            found = _first_difference(ours[key], theirs[key], f"{where}[{key!r}]")
            if found:
                return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        if all(isinstance(x, tuple) and len(x) == 2 for x in ours + theirs):
            keys = [x[0] for x in ours], [x[0] for x in theirs]
            if keys[0] != keys[1]:
                return f"{where} keys: tinyattn {keys[0]}, torch {keys[1]}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            found = _first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
    return f"{where}: tinyattn {ours!r}, torch {theirs!r}"


def check_state_dict(tiny_opt: Any, torch_opt: Any) -> Optional[str]:
    """None when the two optimizers' state dicts have the same structure and their reprs
    agree; also after tinyattn loads torch's state dict (converted) and saves it again."""
    theirs = _structure(torch_opt.state_dict())
    found = _first_difference(_structure(tiny_opt.state_dict()), theirs, "state_dict()")
    if found is None and not any(isinstance(v, torch.Tensor) for g in torch_opt.param_groups
                                 for v in g.values()):
        # (a tensor lr prints as each framework prints a tensor)
        found = _first_difference(repr(tiny_opt), repr(torch_opt), "repr(optimizer)")
    if found is None:
        try:
            converted = Converter()(torch_opt.state_dict())
        except Unconvertible:
            return None
        tiny_opt.load_state_dict(converted)
        # compared with what torch holds after loading its own state dict: a load casts
        # floating state to the parameter's dtype (L-BFGS's t, a float32 lr tensor before,
        # comes back float64 for float64 parameters, in torch as here)
        torch_opt.load_state_dict(copy.deepcopy(torch_opt.state_dict()))
        found = _first_difference(_structure(tiny_opt.state_dict()),
                                  _structure(torch_opt.state_dict()),
                                  "state_dict() after load_state_dict(torch's)")
    return found


def check_trajectory(entry: OptimEntry, optim_input: Any) -> Optional[str]:
    """None when tinyattn's parameters agree with torch's after every step."""
    closure_needed = bool(entry.info.step_requires_closure)
    try:
        kwargs = Converter()(dict(optim_input.kwargs))
        if getattr(optim_input, "params", None) is not None:
            raise Unconvertible("an OptimizerInput with its own params")
    except Unconvertible as exc:
        return f"the optimizer input holds {exc}"
    with R.quiet():
        expected, torch_opt = _run(torch, entry.info.optim_cls, optim_input,
                                   dict(optim_input.kwargs), closure_needed)
    try:
        with R.quiet():
            actual, tiny_opt = _run(tinyattn, entry.tiny_class, optim_input, kwargs,
                                    closure_needed)
    except Exception as exc:  # noqa: BLE001
        return f"tinyattn raises {R._tiny_failure(exc)}"
    for step, (ours, theirs) in enumerate(zip(actual, expected), start=1):
        for name, a, e in zip(("weight", "bias"), ours, theirs):
            try:
                assert_agrees(tinyattn.tensor(a), torch.from_numpy(e),
                              f"{name} after step {step}")
            except AssertionError as exc:
                return str(exc).strip().replace("\n", " ")[:400]
    try:
        with R.quiet():
            return check_state_dict(tiny_opt, torch_opt)
    except Exception as exc:  # noqa: BLE001
        return f"tinyattn raises {R._tiny_failure(exc)} on its state dict"
