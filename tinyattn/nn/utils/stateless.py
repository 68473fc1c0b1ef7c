"""``torch.func.functional_call`` (also ``nn.utils.stateless.functional_call``): call a
module with some of its parameters and buffers replaced by the given tensors, for that call
only (meta-learning, per-sample gradients, ensembles). The module's own tensors are put back
afterwards, also when the call raises; gradients flow to the given tensors.

As torch's: keys are the state-dict names (``"0.weight"``); a dict or a tuple of dicts (no key
twice); with ``tie_weights`` (the default) a tensor tied under several names (a shared
embedding) is replaced under all of them when one name is given; ``strict=True`` refuses
missing and unexpected keys, otherwise unexpected keys are ignored and missing ones keep the
module's tensors."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ...tensor import Tensor
from ..module import Module

__all__ = ["functional_call"]


def _members(module: Module) -> List[Tuple[str, Module, str, Tensor]]:
    """(dotted name, owner, attribute, tensor) of every parameter and buffer, tied ones
    under each of their names."""
    out = []
    for prefix, owner in module.named_modules(remove_duplicate=False):
        own = Module._own_parameters(owner) + Module._own_buffers(owner)
        for attr, value in own:
            out.append(((prefix + "." if prefix else "") + attr, owner, attr, value))
    return out


def functional_call(module: Module,
                    parameter_and_buffer_dicts: Union[Mapping[str, Any],
                                                      Sequence[Mapping[str, Any]]],
                    args: Any = None, kwargs: Optional[Dict[str, Any]] = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named tensors in place of its own."""
    if isinstance(parameter_and_buffer_dicts, Mapping):
        given: Dict[str, Any] = dict(parameter_and_buffer_dicts)
    else:
        given = {}
        repeated: List[str] = []
        for mapping in parameter_and_buffer_dicts:
            for key, value in mapping.items():
                if key in given and key not in repeated:
                    repeated.append(key)
                given[key] = value
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
    members = _members(module)
    names = {name for name, *_ in members}
    if tie_weights:             # a tied tensor given under one name replaces all its names
        by_tensor: Dict[int, Any] = {id(t): given[n] for n, _, _, t in members if n in given}
        replaced = {n: by_tensor[id(t)] for n, _, _, t in members if id(t) in by_tensor}
    else:
        replaced = {n: given[n] for n in names if n in given}
    if strict:
        missing = sorted(names - set(replaced))
        unexpected = sorted(set(given) - names)
        if missing or unexpected:
            lines = []
            if unexpected:
                lines.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected)
                             + ".")
            if missing:
                lines.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(lines))
    saved = []
    try:
        for name, owner, attr, original in members:
            if name in replaced:
                saved.append((owner, attr, original))
                object.__setattr__(owner, attr, replaced[name])    # any tensor, as torch
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, attr, original in reversed(saved):
            object.__setattr__(owner, attr, original)
