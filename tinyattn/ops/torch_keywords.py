"""PyTorch's keyword names on tinyattn's functions: ``torch.matmul(input=a, other=b)``,
``torch.add(x, y, out=z)``, ``torch.softmax(x, -1, dtype=torch.float64)``.

tinyattn's ops name their tensors for the maths (``a``, ``b``, ``x``); ``with_torch_keywords``
lets a call use torch's names as well, and adds torch's ``out=`` and ``dtype=`` where torch
takes them. ops/__init__.py applies it, one explicit line per op, and
tests/test_torch_keywords.py checks every public function against torch's own signatures.

- ``input``/``other``: the op's first/second parameter, under torch's name.
- ``out=``: the result is written into that tensor (resized when its shape differs, as
  torch does) and returned; refused when a gradient is being recorded, as in torch.
- ``dtype=``: the input is cast to that dtype before the op (torch's rule for softmax,
  sum, mean, prod, ...).
- ``inplace=True`` (F.relu, F.dropout, ...): the result is written into the input.
- NumPy's spellings ``axis=`` and ``keepdims=`` for ``dim=`` and ``keepdim=``, as torch's
  argument parser accepts them on every op and method that has those (d2l writes
  ``x.argmax(axis=2)``, ``x.sum(axis=1, keepdims=True)``); ``numpy_spellings`` gives them
  to the ops that need no other torch keyword.
"""
from __future__ import annotations

import functools
import inspect
import warnings
from typing import Any, Callable, Dict, List

import numpy as np

from .. import backend
from ..autograd import is_grad_enabled
from ..precision import is_floating, scalar_type_name
from ..promotion import can_cast
from ..tensor import Tensor, normalize_dtype
from .overlap import OVERLAP_MESSAGE, check_no_partial_overlap

__all__ = ["with_torch_keywords", "stable_keyword_only", "write_out", "unwrapped",
           "out_apart", "out_same_dtype", "out_pieces",
           "numpy_spellings", "NUMPY_SPELLINGS"]

# torch's argument parser takes NumPy's names too (torch/csrc/utils/python_arg_parser.cpp)
NUMPY_SPELLINGS = {"axis": "dim", "keepdims": "keepdim"}


# The ops whose torch kernel is elementwise (TensorIterator): an out= sharing all of an
# input's memory (torch.add(x, y, out=x)) is fine, one sharing part of it (out=x[:-1] with
# input x[1:]) is refused, as for in-place ops (overlap.py). cumsum/cumprod/logcumsumexp/diff
# check the same way in torch. Other ops (mm, sum, sort, ...) do not check, and the ops that
# read their input while they write (cat, gather, topk, ...) refuse any overlap (out_apart).
POINTWISE_OUT = frozenset("""
    abs absolute acos arccos acosh arccosh add addcdiv addcmul angle asin arcsin asinh arcsinh
    atan arctan atan2 arctan2 atanh arctanh bitwise_and bitwise_left_shift bitwise_not
    bitwise_or bitwise_right_shift bitwise_xor ceil clamp clip clamp_max clamp_min copysign cos
    cosh deg2rad digamma div divide eq erf erfc erfinv exp exp2 expm1 float_power floor
    floor_divide fmax fmin fmod frac gcd ge greater_equal gt greater heaviside hypot i0
    isneginf isposinf lcm ldexp le less_equal lerp lgamma log log10 log1p log2 logaddexp
    logaddexp2 logical_and logical_not logical_or logical_xor logit lt less maximum minimum mul
    multiply nan_to_num ne not_equal neg negative nextafter polygamma pow rad2deg reciprocal
    remainder round rsqrt sgn sigmoid sign signbit sin sinc sinh sqrt square sub subtract tan
    tanh true_divide trunc fix where xlogy conj_physical cumsum cumprod logcumsumexp diff
    entr erfcx i0e i1 i1e log_ndtr ndtr ndtri xlog1py
    """.split())
# reductions torch writes into an expanded out= without its internal-overlap check
_UNCHECKED_INTERNAL = frozenset("""sum nansum mean nanmean prod amax amin all any std var
    logsumexp norm vector_norm matrix_norm linalg_norm std_mean var_mean""".split())

INTERNAL_OVERLAP_MESSAGE = ("unsupported operation: more than one element of the written-to "
                            "tensor refers to a single memory location. Please clone() the "
                            "tensor before performing the operation.")


def _refuse_internal_overlap(name: str, target: Tensor) -> None:
    """torch's check of an out= tensor: an expanded one (a stride 0 over more than one
    element) would have several results written into one element."""
    data = target._data
    if not (data.size and any(step == 0 and n > 1
                              for step, n in zip(data.strides, data.shape))):
        return
    if name in _UNCHECKED_INTERNAL:     # torch writes every result into the shared element,
        raise RuntimeError(             # the last one staying: refused here, not computed
            f"{name}(): out= is an expanded tensor, so several results would be written into "
            f"one element (torch writes them one after another and keeps the last; tinyattn "
            f"refuses): pass a tensor with its own memory, e.g. torch.empty(shape)")
    raise RuntimeError(f"{name}(): {INTERNAL_OVERLAP_MESSAGE} (out= is an expanded "
                       f"tensor: pass one with its own memory, e.g. torch.empty(shape))")


def write_out(name: str, out: Any, result: Any, inputs: Any = ()) -> Any:
    """Write ``result`` into ``out`` (a tensor, or a tuple of them for (values, indices)),
    with torch's checks: out= not expanded, and for an elementwise op (POINTWISE_OUT) not
    partly overlapping one of ``inputs`` (the op's tensor arguments)."""
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): out= must be a tuple of {len(result)} tensors here")
        for target, value in zip(out, result):
            write_out(name, target, value, inputs)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): out= must be a Tensor, got {type(out).__name__}")
    _refuse_internal_overlap(name, out)
    if inputs and name in POINTWISE_OUT:
        for value in inputs:
            check_no_partial_overlap(out._data, value._data, f"{name}()")
    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support "
                           f"automatic differentiation, but one of the arguments requires "
                           f"grad.")
    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{name}(): result type {_scalar_type(result.dtype)} can't be "
                           f"cast to the desired output type {_scalar_type(out.dtype)} (pass "
                           f"an out= tensor of dtype {result.dtype})")
    if out.shape != result.shape:                 # torch resizes out to the result's shape
        if out.numel():                           # and warns unless out was empty
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                f"release outputs will not be resized unless they have zero elements. You can "
                f"explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                f"with t.resize_(0).", UserWarning, stacklevel=backend.user_stacklevel())
        out._data = result._data.astype(out.dtype)
    else:
        out._data[...] = result._data
    out._bump_version()
    return out


_scalar_type = scalar_type_name    # torch's ScalarType name, as its out= messages print it


def _renamed_signature(fn: Callable, rename: Dict[str, str], extra: List[str]) -> Any:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    own_to_torch = {own: torch_name for torch_name, own in rename.items()}
    params = [p.replace(name=own_to_torch.get(p.name, p.name))
              for p in signature.parameters.values()]
    names = {p.name for p in params}
    tail = [p for p in params if p.kind == p.VAR_KEYWORD]
    params = [p for p in params if p.kind != p.VAR_KEYWORD]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None)
               for n in extra if n not in names]
    return signature.replace(parameters=params + tail)


def with_torch_keywords(fn: Callable, input: bool = False, other: bool = False,  # noqa: A002
                        out: bool = False, dtype: bool = False, inplace: bool = False,
                        **aliases: str) -> Callable:
    """``fn`` also called with torch's keyword names (see the module docstring).
    ``aliases`` maps further torch names to fn's own (``dims="dims"`` style)."""
    own = [p.name for p in inspect.signature(fn).parameters.values()
           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    rename = dict(aliases)
    if input and own and own[0] != "input":
        rename["input"] = own[0]
    if other and len(own) > 1 and own[1] != "other":
        rename["other"] = own[1]
    first = "input" if input else (own[0] if own else None)
    takes_input = first == "input"         # torch's first argument is the input tensor
    everything = _parameter_names(fn)
    for numpy_name, torch_name in NUMPY_SPELLINGS.items():
        if torch_name in everything and numpy_name not in everything \
                and numpy_name not in rename:
            rename[numpy_name] = rename.get(torch_name, torch_name)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return with_keywords(*args, **kwargs)
        except AttributeError:
            # torch.log10(1 / mse.item()): a Python number where torch takes a tensor. torch
            # refuses it with a TypeError; here the op stopped on a missing tensor attribute.
            given = args[0] if args else kwargs.get("input", kwargs.get(first))
            if takes_input and isinstance(given, (bool, int, float, complex)):
                raise TypeError(f"{fn.__name__}(): argument 'input' (position 1) must be "
                                f"Tensor, not {type(given).__name__} (wrap a number with "
                                f"torch.tensor(...), or use the math module)") from None
            raise

    def with_keywords(*args: Any, **kwargs: Any) -> Any:
        if not kwargs:                      # positional only: nothing to rename or add
            return fn(*args)
        for torch_name, own_name in rename.items():
            if torch_name in kwargs:
                if own_name in kwargs:
                    raise TypeError(f"{fn.__name__}() got both {torch_name}= and "
                                    f"{own_name}= (two names for one argument)")
                kwargs[own_name] = kwargs.pop(torch_name)
        target = kwargs.pop("out", None) if out else None
        cast = kwargs.pop("dtype", None) if dtype else None
        in_place = kwargs.pop("inplace", False) if inplace else False
        if cast is not None:
            args, kwargs = _cast_first(args, kwargs, rename.get(first, first), cast,
                                           fn.__name__)
        if in_place:
            from .inplace import _in_place  # noqa: PLC0415 - inplace.py imports this layer
            x, rest = (args[0], args[1:]) if args else (kwargs.pop(rename.get(first, first)),
                                                        ())
            return _in_place(x, fn.__name__ + "_", lambda t: fn(t, *rest, **kwargs))
        result = fn(*args, **kwargs)
        if target is None:
            return result
        return write_out(fn.__name__, target, result,
                         _tensors_in(list(args) + list(kwargs.values())))

    extra = [n for n, on in (("out", out), ("dtype", dtype), ("inplace", inplace)) if on]
    signature = _renamed_signature(fn, {k: v for k, v in rename.items()
                                        if k not in NUMPY_SPELLINGS}, extra)
    if signature is not None:
        call.__signature__ = signature
    call._torch_keywords = True
    return call


def _parameter_names(fn: Callable) -> set:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def numpy_spellings(fn: Any) -> Any:
    """``fn`` also called with ``axis=``/``keepdims=`` when it takes ``dim``/``keepdim``
    (and is not a ``with_torch_keywords`` wrapper already, which takes them); else ``fn``."""
    if not inspect.isfunction(fn) or getattr(fn, "_torch_keywords", False):
        return fn
    names = _parameter_names(fn)
    if not any(t in names and n not in names for n, t in NUMPY_SPELLINGS.items()):
        return fn
    return with_torch_keywords(fn)


def unwrapped(fn: Callable) -> Callable:
    """The function ``with_torch_keywords`` wrapped (``fn`` itself if it is not a wrapper):
    what the Tensor operators call, since ``a * b`` never passes keywords."""
    return getattr(fn, "__wrapped__", fn)


def _cast_first(args: tuple, kwargs: Dict[str, Any], name: Any, dtype: Any,
                op: str = "") -> Any:
    want = normalize_dtype(dtype)
    if not is_floating(want):   # softmax and log_softmax: torch has no integer kernel
        raise NotImplementedError(f'"{op}_lastdim_kernel_impl" not implemented for '
                                  f"'{want.name}' (as torch): {op}(..., dtype=) takes a "
                                  f"floating dtype, e.g. dtype=torch.float32")
    if args:
        x = args[0]
        return (x.to(want) if isinstance(x, Tensor) else x,) + tuple(args[1:]), kwargs
    if name in kwargs and isinstance(kwargs[name], Tensor):
        kwargs[name] = kwargs[name].to(want)
    return args, kwargs


def out_apart(fn: Callable) -> Callable:
    """``fn`` (a ``with_torch_keywords`` wrapper taking out=) refusing an ``out=`` tensor (or
    tuple of them) that shares memory with a tensor argument, as torch refuses it for ops that
    read their input while they write (masked_select, gather, cat, kthvalue): the result would
    read half-written values."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is None:                 # the common call: nothing to check
            return fn(*args, **kwargs)
        targets = _tensors_in([out])
        inputs = _tensors_in(list(args) + [v for k, v in kwargs.items() if k != "out"])
        for target in targets:
            # an empty tensor has no element to write twice (NumPy gives one of shape
            # (5, 0, 5) the strides (0, 20, 4); torch's check passes it)
            _refuse_internal_overlap(fn.__name__, target)
            for value in inputs:
                if value is target or np.shares_memory(value._data, target._data):
                    raise RuntimeError(f"{fn.__name__}(): {OVERLAP_MESSAGE} (out= shares "
                                       f"memory with an argument of the op, which it reads "
                                       f"while it writes: pass a new tensor as out=)")
        return fn(*args, **kwargs)
    return call


def _tensors_in(values: Any) -> List[Tensor]:
    """The tensors among ``values``, looking one level into lists and tuples (cat's list)."""
    found = []
    for value in values:
        if isinstance(value, (list, tuple)):
            found += [v for v in value if isinstance(v, Tensor)]
        elif isinstance(value, Tensor):
            found.append(value)
    return found


_TORCH_TYPE_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
                     "float64": "double", "int8": "signed char", "uint8": "unsigned char",
                     "int16": "short", "int32": "int", "int64": "long int", "bool": "bool"}


def out_same_dtype(fn: Callable) -> Callable:
    """``fn`` (a ``with_torch_keywords`` wrapper taking out=) refusing an ``out=`` tensor (or
    a tuple's tensor) whose dtype is not the result's, as torch's gather and aminmax refuse
    it ("Expected out tensor to have dtype float, but got double instead"): most ops cast into
    out=, these do not."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.get("out")
        if out is None:
            return fn(*args, **kwargs)
        rest = {key: value for key, value in kwargs.items() if key != "out"}
        result = fn(*args, **rest)
        pairs = zip(out, result) if isinstance(out, (tuple, list)) and \
            isinstance(result, tuple) else [(out, result)]
        for target, value in pairs:
            if isinstance(target, Tensor) and isinstance(value, Tensor) \
                    and value.dtype != target.dtype:
                want, got = (_TORCH_TYPE_NAMES.get(d.name, d.name)
                             for d in (value.dtype, target.dtype))
                raise RuntimeError(f"{fn.__name__}(): Expected out tensor to have dtype {want}, "
                                   f"but got {got} instead (pass an out= tensor of dtype "
                                   f"{value.dtype})")
        return write_out(fn.__name__, out, result,
                         _tensors_in(list(args) + list(rest.values())))
    return call


def out_pieces(fn: Callable) -> Callable:
    """``fn`` (a function returning a tuple of pieces: split_with_sizes_copy, unbind_copy)
    taking torch's ``out=`` list, one tensor per piece, each of the piece's dtype (torch's
    "Expected out tensor to have dtype ..."), each written as ``write_out`` writes; returns
    None then, as torch's (its out= variant returns nothing)."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        out = kwargs.pop("out", None)
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if not isinstance(out, (list, tuple)) or \
                not all(isinstance(t, Tensor) for t in out):
            raise TypeError(f"{fn.__name__}(): argument 'out' must be a list of tensors, "
                            f"not {type(out).__name__}")
        if len(out) != len(result):
            raise RuntimeError(f"{fn.__name__}_out expected an out= argument of size "
                               f"{len(result)}, got size {len(out)} (one tensor per piece)")
        for target, value in zip(out, result):
            if value.dtype != target.dtype:
                want, got = (_TORCH_TYPE_NAMES.get(d.name, d.name)
                             for d in (value.dtype, target.dtype))
                raise RuntimeError(f"{fn.__name__}(): Expected out tensor to have dtype {want}, "
                                   f"but got {got} instead (pass out= tensors of dtype "
                                   f"{value.dtype})")
        for target, value in zip(out, result):
            write_out(fn.__name__, target, value)
        return None
    sig = _renamed_signature(fn, {}, ["out"])
    if sig is not None:
        call.__signature__ = sig
    call._torch_keywords = True
    return call


def numpy_spellings_on(namespace: Dict[str, Any], names: Any, cls: Any = None) -> None:
    """``numpy_spellings`` on the functions ``names`` of ``namespace`` (a module's globals)
    and on every method of ``cls``; one function bound under two names gets one wrapper."""
    done: Dict[int, Any] = {}

    def spelled(fn: Any) -> Any:
        if id(fn) not in done:
            done[id(fn)] = (fn, numpy_spellings(fn))
        return done[id(fn)][1]

    for name in names:
        if name in namespace:
            namespace[name] = spelled(namespace[name])
    if cls is not None:
        for name, value in list(vars(cls).items()):
            if inspect.isfunction(value) and not name.startswith("__"):
                setattr(cls, name, spelled(value))


def picklable_under(module: Any) -> None:
    """Every public function of ``module`` that pickle cannot find by its own ``__module__``
    and ``__qualname__`` (a wrapper that copied its inner function's names) is named by
    where it is public, so ``torch.save(model)`` of a layer that keeps ``F.relu`` as its
    activation pickles it, as torch's does."""
    import sys                                      # noqa: PLC0415
    for name in dir(module):
        value = getattr(module, name, None)
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        home = sys.modules.get(value.__module__)
        found = home
        for part in value.__qualname__.split("."):
            found = getattr(found, part, None)
        if found is not value:
            value.__module__, value.__qualname__ = module.__name__, name


def stable_keyword_only(fn: Callable, name: str) -> Callable:
    """torch's ``sort``/``argsort`` with ``stable=``: its overload
    ``(input, *, stable, dim=-1, descending=False)`` takes ``dim`` and ``descending`` as
    keywords only, so ``torch.sort(x, 1, stable=True)`` is a TypeError there (the positional
    overload has no ``stable``). Refused here too, with torch's text and the spelling to use,
    rather than accepted: a program that runs here must run in torch."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if "stable" in kwargs and len(args) > 1:
            got = ", ".join(["Tensor"] + [type(a).__name__ for a in args[1:]]
                            + [f"{k}={type(v).__name__ if v is not None else 'NoneType'}"
                               for k, v in kwargs.items()])
            out = (", tuple of Tensors out = None" if name == "sort"
                   else ", Tensor out = None")
            raise TypeError(
                f"{name}() received an invalid combination of arguments - got ({got}), but "
                f"expected one of:\n"
                f" * (Tensor input, *, bool stable, int dim = -1, bool descending = False"
                f"{out})\n"
                f" * (Tensor input, int dim = -1, bool descending = False)\n"
                f"(with stable=, pass dim and descending as keywords: "
                f"{name}(x, dim=..., descending=..., stable=True))")
        return fn(*args, **kwargs)

    return call
