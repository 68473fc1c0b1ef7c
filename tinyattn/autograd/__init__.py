"""Reverse-mode automatic differentiation (``tinyattn.autograd``, torch's ``torch.autograd``).

Read in this order (docs/derivations.md#autograd explains each part):

- ``function.py``: ``Function``, the base class of every op; ``Function.apply`` and its
  checks (one device, one floating dtype, the versions of saved arrays);
- ``engine.py``: the backward engine, ``run_backward`` and ``grad``, top to bottom;
- ``grad_mode.py``: ``no_grad``, ``enable_grad``, ``inference_mode``, ``set_grad_enabled``,
  ``detect_anomaly`` and the per-thread switches;
- ``hooks.py``: ``tensor.register_hook``;
- ``pytorch_function.py``: PyTorch-style ``Function``s (static ``forward(ctx, ...)``).

Every name is importable from here, as before the package was split
(``from tinyattn.autograd import Function, no_grad``). The slots that higher layers fill
(``function.dispatch_hook``, ``function._op_observer``) are read and written on
``tinyattn.autograd.function``: a copy here would not be seen by ``Function.apply``.
"""
from __future__ import annotations

from . import engine, function, grad_mode, hooks, pytorch_function
from .engine import (_run_backward_from, accumulate_grad, backward, grad, refuse_create_graph,
                     run_backward)
from .function import (Function, VersionCounter, _check_inputs_agree, _check_same_device,
                       keep_versions, name_node, names_node, set_op_observer, unbroadcast)
from .grad_mode import (_state, detect_anomaly, enable_grad, inference_mode, is_anomaly_enabled,
                        is_grad_enabled, no_grad, set_backward_hook, set_current_module,
                        set_detect_anomaly, set_grad_enabled)
from .hooks import RemovableHandle, register_hook
from .pytorch_function import FunctionCtx

__all__ = ["Function", "FunctionCtx", "no_grad", "enable_grad", "inference_mode",
           "set_grad_enabled", "is_grad_enabled", "detect_anomaly", "set_detect_anomaly",
           "is_anomaly_enabled", "run_backward", "grad", "backward",
           "unbroadcast", "VersionCounter", "set_backward_hook", "set_current_module",
           "register_hook", "RemovableHandle", "keep_versions", "name_node", "names_node"]
