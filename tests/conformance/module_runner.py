"""One ModuleInfo entry of torch's module_db run through torch and tinyattn.

For a module tinyattn has by torch's name (``nn.Linear`` is ``torch.nn.Linear`` under
``python -m tinyattn run-torch``), each ModuleInput of the entry's ``module_inputs_func``:

- builds the module in both with the same constructor arguments, casts it to the dtype,
  puts it in training or eval mode (both modes where the ModuleInfo says they differ), and
  copies torch's parameters and buffers into tinyattn's (the state_dict keys must agree);
- ``values``: the forward outputs agree (structure, shape, dtype, values), and where torch
  raises tinyattn raises; in training mode the buffers after the call agree too (running
  statistics); then ``repr(module)``, the ``state_dict`` keys in order with their dtypes and
  the order of ``named_parameters``/``named_buffers``/``named_modules`` agree;
- ``gradients`` (float64): backward of ``sum(out * g)`` with a fixed random g; the gradient
  of every input and of every parameter (by name) agrees with torch's;
- ``errors``: each of the entry's ``module_error_inputs_func`` cases raises in tinyattn at
  construction or in the forward, where torch does.

Each check returns None when tinyattn agrees, else a one-line description of the difference.
"""
from __future__ import annotations

import dataclasses
from typing import Any, List, Optional, Tuple

import numpy as np
import torch

import tinyattn
from tinyattn import printing

from . import op_runner as R
from .convert import Converter, Unconvertible, assert_agrees, numpy_dtype
from .torch_database import seed
from .torch_names import resolve

__all__ = ["ModuleEntry", "ModuleConverter", "generate_module_inputs", "check_module_values",
           "check_module_gradients", "check_module_error", "training_modes",
           "describe_module_input"]


@dataclasses.dataclass
class ModuleEntry:
    info: Any
    key: str                          # "nn.Linear"
    tiny_class: Optional[type]        # tinyattn's class by that name, or None

    @property
    def present(self) -> bool:
        return self.tiny_class is not None

    @classmethod
    def build(cls, info: Any) -> "ModuleEntry":
        found = resolve(info.name)
        return cls(info, info.name, found if isinstance(found, type) else None)


def training_modes(info: Any) -> List[bool]:
    """torch's modules tests: training mode, and eval mode too where the two differ."""
    return [True, False] if info.train_and_eval_differ else [True]


def generate_module_inputs(info: Any, dtype: torch.dtype, requires_grad: bool,
                           training: bool) -> List[Any]:
    seed(R._stable_seed(info.name, str(dtype), training) % (1 << 31))
    with R.quiet():
        return list(info.module_inputs_func(info, device="cpu", dtype=dtype,
                                            requires_grad=requires_grad, training=training))


def describe_module_input(module_input: Any) -> str:
    c = module_input.constructor_input
    args = [_short(a) for a in c.args] + [f"{k}={_short(v)}" for k, v in c.kwargs.items()]
    return f"{module_input.desc or 'plain'}[{', '.join(args)}]"


def _short(value: Any) -> str:
    if isinstance(value, torch.nn.Module):
        return type(value).__name__
    text = repr(value)
    return text if len(text) < 30 else text[:27] + "..."


class ModuleConverter(Converter):
    """The op converter, plus what module constructors take: a function of torch's (an
    activation such as ``F.gelu``) becomes tinyattn's function of the same name."""

    def __call__(self, value: Any) -> Any:
        if callable(value) and not isinstance(value, (type, torch.Tensor, torch.nn.Module)) \
                and (getattr(value, "__module__", None) or "").startswith("torch"):
            name = getattr(value, "__name__", "")
            found = resolve(f"nn.functional.{name}") or resolve(name)
            if found is None:
                raise Unconvertible(f"torch function {name!r} (tinyattn has no such name)")
            return found
        if isinstance(value, (torch.nn.TransformerEncoderLayer,
                              torch.nn.TransformerDecoderLayer)):
            return self._layer_twin(value)
        if isinstance(value, torch.nn.Module):
            raise Unconvertible(f"a torch module ({type(value).__name__}) as an argument")
        return super().__call__(value)

    def _layer_twin(self, layer: Any) -> Any:
        """tinyattn's layer built with the torch layer's settings (TransformerEncoder takes a
        layer to copy); its parameters are overwritten by torch's state later."""
        name = type(layer).__name__
        activation = layer.activation
        if isinstance(activation, torch.nn.Module):
            activation = type(activation).__name__.lower()
        kwargs = dict(d_model=layer.self_attn.embed_dim, nhead=layer.self_attn.num_heads,
                      dim_feedforward=layer.linear1.out_features, dropout=layer.dropout.p,
                      activation=self(activation), layer_norm_eps=layer.norm1.eps,
                      batch_first=layer.self_attn.batch_first, norm_first=layer.norm_first,
                      bias=layer.linear1.bias is not None)
        twin = resolve(f"nn.{name}")(**kwargs)
        twin.to(numpy_dtype(layer.linear1.weight.dtype))
        return twin


def _build(entry: ModuleEntry, module_input: Any, dtype: torch.dtype, training: bool,
           convert: ModuleConverter) -> Tuple[Any, Any]:
    """torch's module and tinyattn's twin (torch's state copied in); raises Unconvertible or
    whatever a constructor raises (the caller says whose)."""
    c = module_input.constructor_input
    with R.quiet():
        torch_module = entry.info.module_cls(*c.args, **c.kwargs).to(dtype)
    torch_module.train(training)
    args, kwargs = convert(tuple(c.args)), convert(dict(c.kwargs))
    with R.quiet():
        try:
            tiny_module = entry.tiny_class(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            raise _TinyFailed(f"tinyattn's constructor raises {R._tiny_failure(exc)}") from exc
    if isinstance(tiny_module, tinyattn.nn.Module):
        tiny_module.to(numpy_dtype(dtype))
        tiny_module.train(training)
        if getattr(torch_module, "has_uninitialized_params", lambda: False)():
            # a lazy module has no state to copy until a forward shapes it: torch's runs one
            # (no grad); tinyattn's takes its shapes from the copied state dict
            forward = module_input.forward_input
            with torch.no_grad(), R.quiet():
                torch_module(*forward.args, **forward.kwargs)
        _copy_state(torch_module, tiny_module)
    return torch_module, tiny_module


class _TinyFailed(Exception):
    """tinyattn failed where torch did not: the message says how."""


def _copy_state(torch_module: Any, tiny_module: Any) -> None:
    theirs = torch_module.state_dict()
    ours = tiny_module.state_dict()
    if list(theirs) != list(ours) and set(theirs) != set(ours):
        only_torch = sorted(set(theirs) - set(ours))
        only_tiny = sorted(set(ours) - set(theirs))
        raise _TinyFailed(f"state_dict keys differ: torch only {only_torch}, tinyattn only "
                          f"{only_tiny}")
    state = {}
    for name, value in theirs.items():
        if value.dtype == torch.bfloat16 or value.is_floating_point():
            array = value.detach().double().numpy().astype(numpy_dtype(value.dtype))
        else:
            array = value.detach().numpy().copy()
        state[name] = tinyattn.tensor(array)
    tiny_module.load_state_dict(state)


def _forward(module: Any, module_input: Any, convert: Optional[ModuleConverter]) -> Any:
    f = module_input.forward_input
    if convert is None:
        return module(*f.args, **f.kwargs)
    return module(*convert(tuple(f.args)), **convert(dict(f.kwargs)))


def _prepare(entry: ModuleEntry, module_input: Any, dtype: torch.dtype, training: bool
             ) -> Tuple[Any, ...]:
    convert = ModuleConverter()
    torch_module, tiny_module = _build(entry, module_input, dtype, training, convert)
    return convert, torch_module, tiny_module


def check_module_values(entry: ModuleEntry, module_input: Any, dtype: torch.dtype,
                        training: bool) -> Optional[str]:
    """None when tinyattn's forward (and, in training mode, its buffers after it) agrees."""
    try:
        convert, torch_module, tiny_module = _prepare(entry, module_input, dtype, training)
    except (Unconvertible, _TinyFailed) as exc:
        return _failure_text(exc)
    try:
        with R.quiet():
            expected = _forward(torch_module, module_input, None)
        torch_error = None
    except Exception as exc:  # noqa: BLE001 - torch refusing is a result to compare
        expected, torch_error = None, exc
    try:
        with R.quiet():
            actual = _forward(tiny_module, module_input, convert)
    except Unconvertible as exc:
        return _failure_text(exc)
    except Exception as exc:  # noqa: BLE001
        if torch_error is not None:
            return None
        return f"tinyattn's forward raises {R._tiny_failure(exc)}"
    if torch_error is not None:
        return (f"torch's forward raises {R._error_text(torch_error)}; tinyattn returns "
                f"{type(actual).__name__}")
    try:
        assert_agrees(actual, expected)
        if training:
            theirs = dict(torch_module.named_buffers())
            for name, buffer in tiny_module.named_buffers():
                if name in theirs:
                    assert_agrees(buffer, theirs[name], f"buffer {name} after the forward")
    except AssertionError as exc:
        return str(exc).strip().replace("\n", " ")[:400]
    return _compare_structure(torch_module, tiny_module)


def _compare_structure(torch_module: Any, tiny_module: Any) -> Optional[str]:
    """None when what a program reads off the module (after a forward: a lazy module has
    become its concrete class) agrees: ``repr(module)`` (as under run-torch), the
    ``state_dict`` keys in order and each entry's dtype, and the order of
    ``named_parameters``, ``named_buffers`` and ``named_modules``."""
    if not isinstance(tiny_module, tinyattn.nn.Module):
        return None
    for what, names in (("state_dict keys", lambda m: list(m.state_dict())),
                        ("named_parameters", lambda m: [n for n, _ in m.named_parameters()]),
                        ("named_buffers", lambda m: [n for n, _ in m.named_buffers()]),
                        ("named_modules", lambda m: [n for n, _ in m.named_modules()])):
        ours, theirs = names(tiny_module), names(torch_module)
        if ours != theirs:
            return f"{what}: tinyattn {ours}, torch {theirs}"
    theirs = torch_module.state_dict()
    for name, value in tiny_module.state_dict().items():
        if np.dtype(value.dtype) != numpy_dtype(theirs[name].dtype):
            return (f"state_dict[{name!r}]: dtype {np.dtype(value.dtype).name}, torch "
                    f"{str(theirs[name].dtype).replace('torch.', '')}")
    previous = printing.options.torch_names
    printing.options.torch_names = True          # as a script under run-torch prints it
    try:
        ours_text = repr(tiny_module)
    finally:
        printing.options.torch_names = previous
    if ours_text != repr(torch_module):
        return (f"repr(module): tinyattn {ours_text[:160]!r}, torch "
                f"{repr(torch_module)[:160]!r}")
    return None


def _failure_text(exc: Exception) -> str:
    if isinstance(exc, Unconvertible):
        return f"the module input holds {exc}"
    return str(exc)


def check_module_gradients(entry: ModuleEntry, module_input: Any, training: bool
                           ) -> Optional[str]:
    """None when tinyattn's float64 gradients (inputs and parameters) agree with torch's."""
    try:
        convert, torch_module, tiny_module = _prepare(entry, module_input, torch.float64,
                                                      training)
    except (Unconvertible, _TinyFailed) as exc:
        return _failure_text(exc)
    try:
        with R.quiet():
            expected = R._tensors(_forward(torch_module, module_input, None))
    except Exception:  # noqa: BLE001 - torch refuses: check_module_values compares that
        return None
    try:
        with R.quiet():
            actual = R._tensors(_forward(tiny_module, module_input, convert))
    except Exception as exc:  # noqa: BLE001
        return f"tinyattn's forward raises {R._tiny_failure(exc)}"
    if len(actual) != len(expected):
        return f"tinyattn gives {len(actual)} output tensors, torch {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a.requires_grad != e.requires_grad:
            return (f"output {i}: requires_grad={a.requires_grad} where torch gives "
                    f"{e.requires_grad}")
    loss_seed = R._stable_seed(entry.key, describe_module_input(module_input)) % (1 << 31)
    torch_loss = R._loss(expected, torch, loss_seed)
    if torch_loss is None:
        return None
    for t, _ in convert.pairs:          # an input made by an op (x.log()): its gradient too
        t.grad = None                   # (and nothing left from an earlier check)
        if t.requires_grad and not t.is_leaf:
            t.retain_grad()
    with R.quiet():
        torch_loss.backward()
    try:
        with R.quiet():
            R._loss(actual, tinyattn, loss_seed).backward()
    except Exception as exc:  # noqa: BLE001
        return f"tinyattn's backward raises {R._tiny_failure(exc)}"
    pairs = [(f"input tensor {n}", t, ours) for n, (t, ours) in enumerate(convert.pairs)]
    ours = dict(tiny_module.named_parameters())
    pairs += [(f"parameter {name}", p, ours.get(name))
              for name, p in torch_module.named_parameters()]
    for where, t, tiny in pairs:
        if not t.requires_grad:
            continue
        if tiny is None:
            return f"tinyattn has no {where}"
        want, got = t.grad, tiny.grad
        if want is None or got is None:
            if (want is None) != (got is None):
                return (f"gradient of {where}: tinyattn gives "
                        f"{'None' if got is None else 'a tensor'}, torch "
                        f"{'None' if want is None else 'a tensor'}")
            continue
        try:
            assert_agrees(got, want, f"gradient of {where}")
        except AssertionError as exc:
            return str(exc).strip().replace("\n", " ")[:400]
    return None


def check_module_error(entry: ModuleEntry, error_input: Any) -> Optional[str]:
    """None when tinyattn raises on the error input, at construction or in the forward."""
    module_input = error_input.module_error_input
    convert = ModuleConverter()
    c = module_input.constructor_input
    try:
        args, kwargs = convert(tuple(c.args)), convert(dict(c.kwargs))
    except Unconvertible:
        return None                     # tinyattn cannot even be handed the arguments
    try:
        with R.quiet():
            module = entry.tiny_class(*args, **kwargs)
            if module_input.forward_input is not None:
                R._tensors(_forward(module, module_input, convert))
    except Exception:  # noqa: BLE001 - any clear error is what is wanted
        return None
    return (f"tinyattn builds and runs {describe_module_input(module_input)} where torch "
            f"raises {error_input.error_type.__name__} matching {error_input.error_regex!r}")


def module_input_dtype_ok(dtype: torch.dtype) -> bool:
    try:
        return np.dtype(numpy_dtype(dtype)).kind == "f"
    except Unconvertible:
        return False
