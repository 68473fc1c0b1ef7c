"""``Optimizer``: the base class that holds parameter groups and per-parameter state.

An optimizer owns a list of *parameter groups*. Each group is a dict with the key
``"params"`` (a list of ``Parameter``) and one key per hyperparameter (``"lr"``, ...); a
hyperparameter missing from a group takes the optimizer's default. ``step()`` reads each
parameter's ``.grad`` and updates its data in place, counting a version (so a graph that saved
the parameter refuses a later backward); whatever an optimizer must remember between steps (a
momentum buffer, Adam's moment estimates) lives in ``self.state[param]``, a Tensor (as
torch's) on the parameter's device with the parameter's dtype, sharing the array the step
updates in place.

``state_dict()`` and ``load_state_dict()`` follow ``torch.optim.Optimizer``: parameters are
named by their position across all groups (0, 1, 2, ...), arrays are saved as fresh host
Tensors (so ``torch.load(weights_only=True)`` reads a checkpoint holding them, as in torch),
and loading puts each one back on its parameter's device. See docs/optim.md.
"""
from __future__ import annotations

import collections
import copy
import functools
import math
import numbers
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Optional, Tuple, Union
import warnings

import numpy as np

from .. import backend
from ..autograd import enable_grad
from ..autograd.hooks import RemovableHandle
from ..tensor import Tensor
from ..precision import get_default_dtype, is_floating

__all__ = ["Optimizer", "ParamsT", "check_hyperparameter", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]

ParamsT = Union[Iterable[Tensor], Iterable[Dict[str, Any]]]


def check_hyperparameter(name: str, value: Any, low: float = 0.0, high: float = math.inf,
                         high_inclusive: bool = True, nan_ok: bool = False) -> float:
    """``value`` as a Python float, or a ValueError that names it and its allowed range.

    Python floats keep float32 arrays float32 (a NumPy float64 scalar would not), so every
    hyperparameter is stored as a Python float. NaN is refused (as torch's range checks
    ``0.0 <= lr`` refuse it); an infinity within the range is accepted, as torch accepts
    ``lr=inf`` (the first step then turns every weight into NaN or inf, there as here).
    A learning rate may be a one-element Tensor, as in torch: it is checked and kept (each
    step reads ``float(group["lr"])``).
    """
    if name.startswith("lr") and not name.startswith("lr_") and isinstance(value, Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name} as a Tensor must hold one element, got shape "
                             f"{value.shape}")
        check_hyperparameter(name, float(value.item()), low, high, high_inclusive, nan_ok)
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} "
                        f"({type(value).__name__})")
    # A Python int stays an int (torch's groups hold ``weight_decay: 0``, and print it so);
    # it keeps float32 arrays float32 as a Python float does. NumPy scalars become floats.
    kept = value if type(value) is int else float(value)
    value = float(value)
    if nan_ok and math.isnan(value):      # torch's SGD checks `lr < 0.0`, which NaN passes
        return value
    above_high = value > high if high_inclusive else value >= high
    if not value >= low or above_high:  # written so that NaN fails too
        closing = "]" if high_inclusive else ")"
        raise ValueError(f"invalid {name}: {value!r}; it must lie in [{low}, {high}{closing}")
    return kept



def scalar_dtype() -> np.dtype:
    """The dtype of the 0-d state tensors (``step``, ASGD's ``eta`` and ``mu``, NAdam's
    ``mu_product``), as torch's ``_get_scalar_dtype``: float64 when the default float dtype
    is float64, else float32 (also under a half default)."""
    return np.dtype(np.float64 if get_default_dtype() == np.float64 else np.float32)

class Optimizer:
    """Base class: parameter groups, ``zero_grad``, ``state_dict`` / ``load_state_dict``.

    Subclasses pass their ``defaults`` (hyperparameter name -> value), implement
    ``_check_group(group)`` (validate and normalize one group's hyperparameters) and
    ``step()``.
    """

    # Hyperparameters added after checkpoints were written; a state dict without them
    # loads with these values (as torch's __setstate__ fills in "maximize" and others).
    _late_defaults: Dict[str, Any] = {}
    # State entries whose shape is not the parameter's (Adafactor's row and column factors,
    # LBFGS's flat vectors): load_state_dict does not compare their shape with it.
    _shapeless_state: FrozenSet[str] = frozenset()
    # State entries torch keeps as 0-d float32 tensors (``step``; NAdam's ``mu_product``;
    # ASGD's ``eta`` and ``mu``): the state holds them as such tensors between steps (what
    # ``optimizer.state[p]["step"]`` shows, as torch's), the step's arithmetic reads them as
    # Python numbers (_scalars_as_numbers / _numbers_as_scalars around it); state_dict()
    # saves the tensors; load_state_dict reads tensors, arrays or numbers, and, as torch's,
    # casts the floating ones other than ``step`` to the parameter's dtype. Each of
    # tinyattn's optimizers with a step count names its own; a subclass written by a user
    # keeps what it stores, as in torch.
    _tensor_scalar_state: Tuple[str, ...] = ()
    # Between steps the state holds Tensors, as torch's (what a user prints, or mutates in
    # place, is what the step reads). tinyattn's optimizers create them sharing the arrays
    # they update (``Tensor._wrap``) and read ``._data``; one whose step works on arrays in
    # the state (L-BFGS's histories) names those entries here, and its step sees them as
    # arrays (see _with_step_hooks). load_state_dict leaves Tensors.
    _state_as_arrays: FrozenSet[str] = frozenset()
    # torch's kernel switches and flags, present in every group of the optimizers that take
    # them; a checkpoint without them (older tinyattn, older torch) loads with the defaults.
    _KERNEL_KEYS = frozenset({"foreach", "capturable", "differentiable", "fused",
                              "decoupled_weight_decay"})

    def __init__(self, params: ParamsT, defaults: Dict[str, Any]):
        if isinstance(params, Tensor) or isinstance(params, dict):
            raise TypeError(
                f"params should be an iterable of Parameters or of dicts (parameter groups), "
                f"but got a single {type(params).__name__}; wrap it in a list or pass "
                f"model.parameters()")
        self.defaults: Dict[str, Any] = dict(defaults)
        # a defaultdict(dict), as torch's: ``state = self.state[p]`` in a subclass's step
        self.state: Dict[Tensor, Dict[str, Any]] = collections.defaultdict(dict)
        self.param_groups: List[Dict[str, Any]] = []
        groups = list(params)
        if len(groups) == 0:
            raise ValueError("optimizer got an empty parameter list: pass model.parameters() "
                             "of a model that has parameters")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    # ---------------------------------------------------------------- groups
    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        """Add a group (a dict with ``"params"`` and optional hyperparameters)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"a parameter group must be a dict, got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("a parameter group needs a 'params' key holding its parameters")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError("a group's params must be an ordered sequence (a list), not a set: "
                            "a set's order changes between runs, which breaks state dicts")
        else:
            params = list(params)
        # torch 2.13 accepts named parameters, (name, tensor) pairs (model.named_parameters()),
        # and keeps the names in the group as "param_names".
        names = [p[0] for p in params if isinstance(p, tuple)]
        if names and len(names) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param "
                             "names are missing: pass every parameter as a (name, tensor) pair "
                             "or none of them")
        if names:
            params = [p[1] for p in params]
        for index, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"the optimizer can only update Tensors (Parameters), but "
                                f"params[{index}] is a {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"params[{index}] is not a leaf tensor (it was computed by an "
                                 f"op); optimize the Parameters it was computed from")
        group = {key: value for key, value in param_group.items()
                 if key not in ("params", "param_names")}
        if names:
            group["param_names"] = names
        unknown = sorted(set(group) - set(self.defaults) - {"initial_lr", "param_names"})
        if unknown:
            raise ValueError(f"unknown hyperparameter(s) {unknown} in a parameter group; "
                             f"{type(self).__name__} accepts {sorted(self.defaults)}")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        if len({id(p) for p in params}) != len(params):
            # torch warns and keeps both entries (each step then updates the parameter twice)
            warnings.warn("optimizer contains a parameter group with duplicate parameters; "
                          "in future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          UserWarning, stacklevel=3)
        seen = set()
        for other in self.param_groups:
            seen.update(id(p) for p in other["params"])
            if ("param_names" in other) != bool(names):
                kind = "with names" if names else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. "
                                 f"cannot add param group {kind} to the optimizer")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group: list "
                             "each parameter in one group only")
        group = self._check_group(group)
        group["params"] = params
        self.param_groups.append(group)

    def _check_group(self, group: Dict[str, Any]) -> Dict[str, Any]:
        """Validate one group's hyperparameters; return them normalized (subclasses)."""
        return group

    # ---------------------------------------------------------------- stepping
    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        """Update every parameter that has a gradient (subclasses)."""
        raise NotImplementedError(f"{type(self).__name__} must implement step()")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Each subclass's own ``step`` runs the step hooks around it, as torch's does."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_runs_step_hooks", False):
            cls.step = _with_step_hooks(step)

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` before each ``step()``; it may return a new
        ``(args, kwargs)`` for the step (torch's ``Optimizer.register_step_pre_hook``)."""
        return _register(self.__dict__.setdefault("_step_pre_hooks", []), hook)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(optimizer, args, kwargs)`` after each ``step()`` (torch's
        ``Optimizer.register_step_post_hook``)."""
        return _register(self.__dict__.setdefault("_step_post_hooks", []), hook)

    def _kernel_options(self, foreach: Optional[bool] = None, fused: Optional[bool] = None,
                        capturable: bool = False, differentiable: bool = False) -> None:
        """torch's choices of kernel (``foreach``, ``fused``, ``capturable``): the same
        arithmetic, so accepted, with torch's checks. ``capturable=True`` (CUDA graphs) and
        ``differentiable=True`` (a step recorded in the graph) fail at ``step()`` as torch's
        do for CPU leaf parameters; tinyattn has no CUDA graphs or higher-order autograd."""
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        self._capturable, self._differentiable = bool(capturable), bool(differentiable)

    def _evaluate(self, closure: Optional[Callable[[], Any]]) -> Any:
        """Run the closure (which recomputes the loss and calls backward), as torch does."""
        flags = {key for group in self.param_groups for key in ("capturable", "differentiable")
                 if group.get(key)}
        if getattr(self, "_differentiable", False) or "differentiable" in flags:
            raise RuntimeError(f"{type(self).__name__}(differentiable=True) is not implemented: "
                               f"tinyattn has no higher-order autograd (torch's step also "
                               f"refuses leaf parameters that require grad); drop it")
        if getattr(self, "_capturable", False) or "capturable" in flags:
            raise AssertionError(f"{type(self).__name__}(capturable=True) is for CUDA graphs, "
                                 f"which tinyattn does not have (torch's step also refuses CPU "
                                 f"parameters); drop it")
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient: set it to None (default) or fill it with 0."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad._data[...] = 0
                    p.grad._bump_version()

    # ---------------------------------------------------------------- state dicts
    def state_dict(self) -> Dict[str, Any]:
        """``{"state": {index: {name: value}}, "param_groups": [{..., "params": [index]}]}``.

        Arrays are fresh host Tensors, as torch's; ``index`` counts parameters across all
        groups in order.
        """
        # torch's numbering: a group's parameters take the next len(params) numbers (a
        # duplicate inside a group keeps its last position; one seen in an earlier group keeps
        # that group's number)
        index: Dict[int, int] = {}
        groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: copy.deepcopy(v) for k, v in group.items() if k != "params"}
            earlier = set(index)
            for i, p in enumerate(group["params"], start):
                if id(p) not in earlier:
                    index[id(p)] = i
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(group["params"])
            groups.append(packed)
        state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state and index[id(p)] not in state:
                    state[index[id(p)]] = {name: self._saved_value(name, value)
                                           for name, value in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def _saved_value(self, name: str, value: Any) -> Any:
        """A state entry as torch's state dict holds it: a number torch keeps as a 0-d
        tensor becomes a 0-d Tensor of ``scalar_dtype()`` (float32, float64 under a float64
        default); tensors and arrays become fresh host Tensors."""
        if name in self._tensor_scalar_state and isinstance(value, numbers.Real):
            return Tensor._wrap(np.array(value, dtype=scalar_dtype()))
        if isinstance(value, Tensor):
            return Tensor._wrap(np.array(backend.to_host(value._data), copy=True))
        return _host_copy(value)

    def _scalars_as_numbers(self) -> Dict[Tuple[int, str], Any]:
        """Before a step: the 0-d tensors of ``_tensor_scalar_state`` as the Python numbers
        the arithmetic uses (``step`` an int); returns their dtypes to restore after it."""
        dtypes: Dict[Tuple[int, str], Any] = {}
        if not self._tensor_scalar_state:
            return dtypes
        for p, state in self.state.items():
            for name in self._tensor_scalar_state:
                value = state.get(name)
                if isinstance(value, Tensor) and value.dim() == 0:
                    dtypes[(id(p), name)] = value.dtype
                    dtypes[(id(p), name, "tensor")] = value       # written back in place
                    number = value.item()
                    state[name] = int(round(number)) if name == "step" else float(number)
        return dtypes

    def _numbers_as_scalars(self, dtypes: Dict[Tuple[Any, ...], Any],
                            stepped: FrozenSet[int] = frozenset()) -> None:
        """After a step (or a load): those entries back as 0-d host tensors of
        ``scalar_dtype()`` unless they had another dtype before (a float64 parameter's loaded
        ``eta``). After a step,
        as torch's ``state_step += 1`` / ``eta.copy_(...)``: the Tensor that was there before
        takes the new value in place, one version more, and one made by the step starts at
        version 1; only for the parameters the step updated (``stepped``: ids)."""
        if not self._tensor_scalar_state:
            return
        for p, state in self.state.items():
            for name in self._tensor_scalar_state:
                value = state.get(name)
                if isinstance(value, numbers.Real) and not isinstance(value, bool):
                    dtype = dtypes.get((id(p), name), scalar_dtype())
                    before = dtypes.get((id(p), name, "tensor"))
                    if before is not None and getattr(before._data, "flags", None) is not \
                            None and before._data.flags.writeable:
                        before._data[()] = value
                        state[name] = before
                    else:
                        state[name] = Tensor._wrap(np.array(value, dtype=dtype))
                    if id(p) in stepped:
                        state[name]._bump_version()

    def _tensors_as_arrays(self) -> Dict[int, Tuple[Any, Tensor]]:
        """Before a step of tinyattn's that works on arrays: each Tensor in the entries
        ``_state_as_arrays`` names (also inside a list, as L-BFGS's histories) as its array.
        Returns id(array) -> (array, Tensor), so that the same Tensors go back after it."""
        wrapped: Dict[int, Tuple[Any, Tensor]] = {}
        names = self._state_as_arrays
        for state in self.state.values():
            for name, value in state.items():
                if name not in names:
                    continue
                if isinstance(value, Tensor):
                    data = value._data
                    wrapped[id(data)] = (data, value)
                    state[name] = data
                elif isinstance(value, list):
                    for i, item in enumerate(value):
                        if isinstance(item, Tensor):
                            data = item._data
                            wrapped[id(data)] = (data, item)
                            value[i] = data
        return wrapped

    def _arrays_as_tensors(self, wrapped: Optional[Dict[int, Tuple[Any, Tensor]]] = None
                           ) -> None:
        """After such a step (``wrapped`` given: the entries ``_state_as_arrays`` names) or
        a load (every entry): each array (and floating NumPy scalar) in the state as a
        Tensor, as torch's state holds tensors: the Tensor it was unwrapped from where the
        array is the same (its values changed in place), else a new one sharing it."""
        names = self._state_as_arrays if wrapped is not None else None
        wrapped = wrapped or {}
        skip = self._tensor_scalar_state
        for state in self.state.values():
            for name, value in state.items():
                if name in skip or (names is not None and name not in names):
                    continue
                if isinstance(value, list):
                    for i, item in enumerate(value):
                        if not isinstance(item, Tensor) and _is_state_array(item):
                            value[i] = _as_tensor(item, wrapped)
                elif not isinstance(value, Tensor) and _is_state_array(value):
                    state[name] = _as_tensor(value, wrapped)

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        """Restore what ``state_dict()`` returned: hyperparameters and per-parameter state.

        Every check runs before anything is written, so a mismatched state dict leaves the
        optimizer untouched. Arrays go to each parameter's device and dtype.
        """
        if not isinstance(state_dict, dict) or set(state_dict) != {"state", "param_groups"}:
            keys = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict)
            raise ValueError(f"an optimizer state dict has exactly the keys ['param_groups', "
                             f"'state'], got {keys}; pass what optimizer.state_dict() returned")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"the state dict has {len(saved_groups)} parameter group(s) but "
                             f"this optimizer has {len(self.param_groups)}")
        params: List[Tensor] = []
        for number, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"parameter group {number} holds {len(saved['params'])} "
                                 f"parameter(s) in the state dict but {len(group['params'])} "
                                 f"in this optimizer: was it saved for a different model?")
            missing = sorted(set(self.defaults) - set(saved) - set(self._late_defaults)
                             - self._KERNEL_KEYS)
            if missing:
                raise ValueError(f"parameter group {number} of the state dict lacks "
                                 f"hyperparameter(s) {missing}: was it saved by a different "
                                 f"optimizer than {type(self).__name__}?")
            params.extend(group["params"])
        saved_indices = [i for saved in saved_groups for i in saved["params"]]
        by_index = dict(zip(saved_indices, params))
        for saved_index, entries in state_dict["state"].items():
            if saved_index not in by_index:
                raise ValueError(f"the state dict holds state for parameter {saved_index}, "
                                 f"which none of its parameter groups lists")
            p = by_index[saved_index]
            for name, value in entries.items():
                if name in self._shapeless_state:
                    continue
                if _is_array(value) and tuple(value.shape) != p.shape:
                    raise ValueError(f"state {name!r} of parameter {saved_index} has shape "
                                     f"{tuple(value.shape)} in the state dict but the "
                                     f"parameter has shape {p.shape}: was it saved for a "
                                     f"different model?")
        new_groups = []
        for saved, group in zip(saved_groups, self.param_groups):
            # a Tensor learning rate stays a Tensor, as torch's does
            restored = {k: copy.deepcopy(v) if k == "lr" and isinstance(v, Tensor)
                        else _to_python(copy.deepcopy(v)) for k, v in saved.items()
                        if k != "params"}
            for key, value in self._late_defaults.items():
                restored.setdefault(key, value)
            for key in self._KERNEL_KEYS & set(self.defaults):
                restored.setdefault(key, self.defaults[key])
            restored = self._check_group(restored)  # a bad hyperparameter raises here
            restored["params"] = group["params"]
            new_groups.append(restored)
        # Every check passed: write.
        self.param_groups = new_groups
        self.state = collections.defaultdict(dict)
        dtypes: Dict[Tuple[int, str], Any] = {}
        for saved_index, entries in state_dict["state"].items():
            p = by_index[saved_index]
            self.state[p] = {name: self._loaded_value(name, value, p)
                             for name, value in entries.items()}
            for name in self._tensor_scalar_state:
                if name != "step" and is_floating(p.dtype):   # torch casts to p's dtype
                    dtypes[(id(p), name)] = p.dtype
        self._numbers_as_scalars(dtypes)
        self._arrays_as_tensors()

    def _loaded_value(self, name: str, value: Any, p: Tensor) -> Any:
        """A saved state entry for stepping: a scalar torch keeps as a 0-d tensor (a Tensor
        from torch or from ``state_dict()``, or a number from an older checkpoint) as a
        Python number (``step`` an int); anything else via ``_to_param``."""
        if name in self._tensor_scalar_state and not _is_array(value):
            number = value.item() if hasattr(value, "item") else value
            return int(round(number)) if name == "step" else float(number)
        return _to_param(value, p)

    def __repr__(self) -> str:
        # torch's layout: each group opens with a newline, so groups after the first are
        # set off by a blank line; keys sorted
        text = f"{type(self).__name__} ("
        for number, group in enumerate(self.param_groups):
            text += f"\nParameter Group {number}\n"
            for key in sorted(k for k in group if k != "params"):
                text += f"    {key}: {group[key]}\n"
        return text + ")"


def _is_array(value: Any) -> bool:
    """True for arrays with at least one dimension (0-d arrays count as scalars)."""
    return hasattr(value, "shape") and hasattr(value, "dtype") and len(value.shape) > 0


def _is_state_array(value: Any) -> bool:
    """An array (any number of dimensions) or a floating NumPy scalar: state torch keeps as
    a Tensor."""
    if isinstance(value, np.generic):
        return isinstance(value, np.floating)
    return isinstance(value, np.ndarray) or (hasattr(value, "shape") and hasattr(value, "dtype")
                                             and not isinstance(value, Tensor))


def _as_tensor(value: Any, wrapped: Dict[int, Tuple[Any, Tensor]]) -> Tensor:
    """``value`` as a Tensor: the one it was unwrapped from before the step, if any."""
    known = wrapped.get(id(value))
    if known is not None and known[0] is value and known[1]._data is value:
        return known[1]
    if isinstance(value, np.generic):
        value = np.asarray(value)
    return Tensor._wrap(value)


def _to_python(value: Any) -> Any:
    """NumPy scalars and 0-d arrays (e.g. after np.savez) as Python numbers, recursively.

    A NumPy float64 scalar would turn float32 updates into float64 arithmetic and change the
    rounding, so a resumed run would drift from an uninterrupted one.
    """
    if isinstance(value, (list, tuple)):
        return type(value)(_to_python(v) for v in value)
    if isinstance(value, Tensor) and value.dim() == 0:
        return value.item()
    if hasattr(value, "shape") and hasattr(value, "dtype") and len(value.shape) == 0:
        return backend.to_host(value).item()
    return value


# torch.optim.optimizer.register_optimizer_step_pre_hook / _post_hook: for every optimizer
_GLOBAL_STEP_PRE_HOOKS: List[Callable[..., Any]] = []
_GLOBAL_STEP_POST_HOOKS: List[Callable[..., Any]] = []


def _register(hooks: List[Callable[..., Any]], hook: Callable[..., Any]) -> RemovableHandle:
    if not callable(hook):
        raise TypeError(f"a step hook must be callable, got {type(hook).__name__}")
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A pre hook run before every optimizer's ``step()``, before its own pre hooks."""
    return _register(_GLOBAL_STEP_PRE_HOOKS, hook)


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A post hook run after every optimizer's ``step()``, after its own post hooks."""
    return _register(_GLOBAL_STEP_POST_HOOKS, hook)


def _versions_before(optimizer: Any) -> Dict[Any, int]:
    """Before a step: the versions of the parameters that have a gradient (the ones a step
    updates; their ids, also as keys) and of their array state tensors."""
    versions: Dict[Any, int] = {}
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            versions[id(p)] = p._version
            for name, value in optimizer.state.get(p, {}).items():
                if isinstance(value, Tensor):
                    versions[(id(p), name)] = value._version
    return versions


def _count_writes_as_torch(optimizer: Any, versions: Dict[Any, int]) -> None:
    """After a step of tinyattn's: each state tensor and parameter it updated as many
    versions on as torch's step writes into it in place (``exp_avg_sq.mul_(b2).addcmul_(..)``
    is two), so ``_version`` reads as torch's and a graph that saved one of them, or a
    reference a program kept, sees the change (``_torch_writes``, per optimizer). tinyattn's
    step writes each array once and may count fewer; never more."""
    writes = getattr(optimizer, "_torch_writes", None)
    if writes is None:
        return
    had_state = {key[0] for key in versions if isinstance(key, tuple)}  # once, not per p
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in versions:
                continue
            state = optimizer.state.get(p, {})
            first = id(p) not in had_state
            for name, count in writes(group, first).items():
                tensor = p if name == "param" else state.get(name)
                if not isinstance(tensor, Tensor) or tensor.dim() == 0 and name != "param":
                    continue
                start = versions.get(id(p) if name == "param" else (id(p), name), 0)
                for _ in range(count - (tensor._version - start)):
                    tensor._bump_version()


def _with_step_hooks(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` with torch's hook order: the global pre hooks, the optimizer's pre hooks (a
    pre hook returning ``(args, kwargs)`` replaces them), the step, the optimizer's post
    hooks, the global post hooks. A subclass's step calling ``super().step()`` runs them once."""
    # A step of tinyattn's that works on arrays in the state (``_state_as_arrays``, L-BFGS)
    # sees the state's Tensors unwrapped to their arrays, wrapped back after (the same
    # Tensor objects where the array is the same), so that between steps
    # ``optimizer.state[p]`` holds Tensors, as torch's. The others keep Tensors in the state
    # and read their arrays; a step written by a user sees the Tensors it stored.
    if step.__module__.startswith(__name__.rpartition(".")[0] + "."):
        def own(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not self._state_as_arrays or self.__dict__.get("_arrays_out"):
                return step(self, *args, **kwargs)
            self.__dict__["_arrays_out"] = True
            wrapped = self._tensors_as_arrays()
            try:
                return step(self, *args, **kwargs)
            finally:
                self.__dict__["_arrays_out"] = False
                self._arrays_as_tensors(wrapped)
    else:
        own = step

    @functools.wraps(step)
    def stepped(self: Any, *rest: Any, **kwargs: Any) -> Any:
        if self.__dict__.get("_in_step"):
            return own(self, *rest, **kwargs)
        versions = _versions_before(self)
        args = (self,) + rest           # as torch's hooks see them: the optimizer first
        for hook in _GLOBAL_STEP_PRE_HOOKS + self.__dict__.get("_step_pre_hooks", []):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"an optimizer step pre hook must return None or a "
                                       f"tuple of (new_args, new_kwargs), but got {result!r}")
                args, kwargs = result
        self.__dict__["_in_step"] = True
        dtypes = self._scalars_as_numbers()
        try:
            out = own(*args, **kwargs)
        finally:
            self.__dict__["_in_step"] = False
            stepped = frozenset(key for key in versions if isinstance(key, int))
            self._numbers_as_scalars(dtypes, stepped)
        if own is not step:             # tinyattn's own step (a user's counts its own writes)
            _count_writes_as_torch(self, versions)
        for hook in self.__dict__.get("_step_post_hooks", []) + _GLOBAL_STEP_POST_HOOKS:
            hook(self, args, kwargs)
        return out
    stepped._runs_step_hooks = True  # type: ignore[attr-defined]
    return stepped


def _host_copy(value: Any) -> Any:
    """Arrays to fresh host Tensors (never aliasing live state), also inside lists, as torch's
    state dicts hold tensors (``torch.load(weights_only=True)`` reads them back); other values
    deep-copied."""
    if _is_array(value):
        return Tensor._wrap(np.array(backend.to_host(value), copy=True))
    if isinstance(value, np.floating) or (hasattr(value, "shape") and hasattr(value, "dtype")
                                          and is_floating(value.dtype)):
        # a NumPy scalar / 0-d array (L-BFGS's t and H_diag): torch holds a 0-d tensor
        return Tensor._wrap(np.array(backend.to_host(value), copy=True))
    if isinstance(value, (list, tuple)):
        return type(value)(_host_copy(v) for v in value)
    return copy.deepcopy(value)


def _to_param(value: Any, p: Tensor) -> Any:
    """A saved value back on ``p``'s device; floating arrays take ``p``'s dtype (as in torch).

    Tensors (what ``state_dict()`` returns) and arrays (older checkpoints, NumPy archives)
    both load, also inside lists (L-BFGS's histories)."""
    if isinstance(value, (list, tuple)):
        return type(value)(_to_param(v, p) for v in value)
    if isinstance(value, Tensor):
        if value.dim() == 0 and is_floating(value.dtype):
            # a 0-d floating tensor (L-BFGS's t, H_diag): a NumPy scalar of p's dtype, what
            # the step computed, so a resumed run rounds as an uninterrupted one
            return np.asarray(backend.to_host(value._data), dtype=p.dtype)[()]
        value = value._data
    if not _is_array(value):
        return _to_python(copy.deepcopy(value))
    host = np.array(backend.to_host(value), copy=True)
    if is_floating(host.dtype):
        host = host.astype(p.dtype, copy=False)
    return backend.to_device(host, p.device)
