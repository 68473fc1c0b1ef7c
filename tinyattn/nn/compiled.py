"""``torch.compile`` as tinyattn has it: the same values, computed eagerly.

torch.compile traces a model into fused kernels; the numbers it computes are the eager ones
(to rounding). tinyattn has one way to run an op, so compiling changes nothing but the
structure torch gives the result, which programs do read:

- ``compile(module)`` returns an ``OptimizedModule`` that holds the module as its child
  ``_orig_mod``: its ``state_dict()`` keys start with ``_orig_mod.`` (nanoGPT strips that
  prefix when it loads a checkpoint), it prints as ``OptimizedModule((_orig_mod): ...)``, and
  an attribute it lacks is read from the module (``compiled.config``);
- ``compile(function)`` returns a function that calls it; ``compile(mode=...)`` without a model
  is a decorator; ``disable=True`` returns the model itself;
- ``module.compile()`` compiles in place (torch's ``Module.compile``): nothing changes here;
- torch's argument checks: an unknown ``mode``, ``mode`` together with ``options``, and an
  unknown ``backend`` name raise torch's RuntimeError.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional

from .module import Module

__all__ = ["compile", "OptimizedModule"]

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
BACKENDS = ("inductor", "eager", "aot_eager", "aot_eager_decomp_partition", "cudagraphs",
            "openxla", "tvm", "onnxrt")


class OptimizedModule(Module):
    """A compiled module: forward is the original module's (tinyattn runs ops eagerly)."""

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: torch's OptimizedModule reads the module's
        if name == "_orig_mod" or "_orig_mod" not in self.__dict__:
            raise AttributeError(f"'OptimizedModule' object has no attribute '{name}'")
        return getattr(self.__dict__["_orig_mod"], name)


def _check(mode: Optional[str], options: Any, backend: Any) -> None:
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if isinstance(backend, str) and backend not in BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}, see "
                           f"`torch._dynamo.list_backends()` for available backends.")


def compile(model: Optional[Callable[..., Any]] = None, *,  # noqa: A001 - torch's name
            fullgraph: bool = False, dynamic: Optional[bool] = None,
            backend: Any = None, mode: Optional[str] = None,
            options: Optional[dict] = None, name: Optional[str] = None,
            disable: bool = False, recompile_limit: Optional[int] = None,
            isolate_recompiles: bool = False, shapes_spec: Any = None) -> Any:
    """torch.compile: the model back, wrapped as torch wraps it; its values are eager. The
    tracing options (fullgraph, dynamic, name, recompile_limit, ...) change nothing here."""
    _check(mode, options, backend)
    if model is None:
        def decorate(fn: Callable[..., Any]) -> Any:
            return compile(fn, mode=mode, options=options, backend=backend, disable=disable)
        return decorate
    if disable:
        return model
    if isinstance(model, Module):
        return OptimizedModule(model)
    if not callable(model):
        raise RuntimeError("Expected a callable or an nn.Module to compile, got "
                           f"{type(model).__name__}")

    @functools.wraps(model)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        return model(*args, **kwargs)
    return compiled

