"""One OpInfo entry run through torch and tinyattn: its variants, samples and checks.

``OpEntry.build(info)`` finds tinyattn's counterparts of the entry's variants by torch's names
(torch_names.py): the function (``torch.X``, ``torch.nn.functional.X``, ``torch.linalg.X``,
...), the Tensor method, the in-place method ``X_``, each alias and the Python operator
(``x + y``, ``x += y``: the entry's operator_variant and inplace_operator_variant). Four
checks run a sample through them:

- ``check_values``: outputs agree (structure, shape, dtype, values, and ``str()`` with the
  numbers masked: layout, ``size=``, ``dtype=``); where torch raises,
  tinyattn raises; an in-place variant returns its input, changed.
- ``check_gradients``: float64; backward of ``sum(out * g)`` with a fixed random g; every
  input's gradient agrees with torch's, None where torch's is None.
- ``check_error``: an ``error_inputs`` case raises in tinyattn, an exception of the type
  torch raises (``ErrorInput.error_type``).
- ``check_saves``: after the op, an in-place write to one input or output makes backward
  raise in tinyattn exactly when it raises in torch.

Each check returns None when tinyattn agrees, else a one-line description of the difference.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import re
import traceback
import warnings
import zlib
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import torch

import tinyattn
from tinyattn import printing

from .convert import Converter, Unconvertible, assert_agrees, numpy_dtype
from .torch_database import seed
from .torch_names import TORCH_TEST_MODULES, rebind, resolve, tensor_method

__all__ = ["Variant", "OpEntry", "entry_key", "tested_dtypes", "reference_dtypes",
           "select_samples",
           "check_values", "check_gradients", "check_error", "check_saves", "check_out",
           "out_dtype", "SEED", "quiet",
           "samples_per_case", "RUN_ALL", "SIGN_GAUGE_ENTRIES", "takes_complex",
           "COMPLEX_ENTRIES"]

SEED = 20240530
# Entries whose outputs are unique only up to a sign (gauge) per eigen- or singular vector:
# their values are compared as torch's own tests compare their gradients, through the
# sample's output_process_fn_grad (|V|, |U|, U Vh, S: invariant under those signs), after
# the raw outputs' structure, shapes and dtypes.
SIGN_GAUGE_ENTRIES = frozenset({"linalg.eigh", "linalg.svd", "svd"})
RUN_ALL = os.environ.get("TINYATTN_CONFORMANCE", "") == "all"


def samples_per_case(kind: str) -> int:
    """How many samples one (op, dtype) case draws: a few by default, all of them with
    TINYATTN_CONFORMANCE=all (docs/pytorch.md#how-conformance-is-checked)."""
    if RUN_ALL:
        return 1 << 30
    return {"values": 4, "reference": 2, "gradients": 3, "saves": 1, "out": 2,
            "noncontiguous": 1}[kind]


def entry_key(info: Any) -> str:
    """``"add"``, ``"norm.nuc"``: the OpInfo's name and its variant_test_name."""
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


@dataclasses.dataclass
class Variant:
    """One way to call the op: torch's callable and tinyattn's, both taking
    ``(input, *args, **kwargs)``."""

    kind: str                   # "function", "method", "inplace", "alias:<name>", ...
    torch_call: Callable[..., Any]
    tiny_call: Callable[..., Any]

    @property
    def in_place(self) -> bool:
        return self.kind in ("inplace", "inplace_operator") or self.kind.endswith("_inplace")


def _method_caller(name: str) -> Callable[..., Any]:
    def call(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        return getattr(input, name)(*args, **kwargs)
    call.__name__ = name
    return call


def _name_of(callable_: Any) -> Optional[str]:
    return getattr(callable_, "__name__", None)


@dataclasses.dataclass
class OpEntry:
    info: Any
    key: str
    variants: List[Variant]
    missing: List[str]           # torch's variants of this entry that tinyattn lacks

    @property
    def present(self) -> bool:
        return bool(self.variants)

    @classmethod
    def build(cls, info: Any) -> "OpEntry":
        variants: List[Variant] = []
        missing: List[str] = []
        function = _function_variant(info)
        if function is not None:
            variants.append(Variant("function", info.op, function))
        elif _has_public_name(info):
            missing.append(f"torch.{info.name}")
        for kind, torch_variant in (("method", info.method_variant),
                                    ("inplace", info.inplace_variant)):
            name = _name_of(torch_variant)
            if torch_variant is None or name is None or torch_variant is info.op:
                continue
            if tensor_method(name) is not None:
                variants.append(Variant(kind, torch_variant, _method_caller(name)))
            else:
                missing.append(f"Tensor.{name}")
        for alias in info.aliases:
            found = resolve(alias.name)
            if found is not None:
                variants.append(Variant(f"alias:{alias.name}", alias.op, found))
            else:
                missing.append(f"torch.{alias.name}")
            name = _name_of(alias.inplace_variant)
            if name is not None:
                if tensor_method(name) is not None:
                    variants.append(Variant(f"alias:{name}_inplace", alias.inplace_variant,
                                            _method_caller(name)))
                else:
                    missing.append(f"Tensor.{name}")
        if variants:          # x + y, x += y (operator.add, operator.iadd) on either side
            for kind, operator in (("operator", info.operator_variant),
                                   ("inplace_operator", info.inplace_operator_variant)):
                if operator is not None:
                    variants.append(Variant(kind, operator, operator))
        return cls(info, entry_key(info), variants, missing)

    @property
    def function(self) -> Optional[Variant]:
        for variant in self.variants:
            if not variant.in_place:
                return variant
        return None


def _has_public_name(info: Any) -> bool:
    return not (info.name.startswith("_") or info.name.startswith("torch.ops")) \
        or info.name.startswith("__")


def _function_variant(info: Any) -> Optional[Callable[..., Any]]:
    """tinyattn's counterpart of ``info.op``, found by the entry's name."""
    op = info.op
    name = info.name
    if not _has_public_name(info):
        return None
    if isinstance(op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return None
    if name.startswith("__") and name.endswith("__"):       # __radd__, __getitem__
        return tensor_method(name)       # unbound, as torch's Tensor.__radd__ is
    module = getattr(op, "__module__", "") or ""
    if module.startswith(TORCH_TEST_MODULES):
        # a small function of torch's test database (``lambda x, shape: x.view(shape)``):
        # tinyattn has the op when it has the name, as a function or a Tensor method
        if resolve(name) is None and tensor_method(name.rpartition(".")[2]) is None:
            return None
        return rebind(op)
    found = resolve(name)
    if (found is None or not callable(found)) and "." not in name \
            and tensor_method(name) is not None and not callable(getattr(torch, name, None)):
        # a Tensor-only op (contiguous, expand_as, ...), or one whose torch.<name> is a
        # dtype (torch.cdouble; x.cdouble() converts)
        return _method_caller(name)
    return found


# ------------------------------------------------------------------ dtypes and samples
_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
           torch.int32, torch.bool)
_MORE_DTYPES = (torch.uint8, torch.int8, torch.int16)


# The entries whose complex inputs are compared too (complex64 and complex128 values, complex128
# gradients): torch.fft and the complex-number ops. Every other op refuses a complex input in
# tinyattn (docs/pytorch.md), which is not compared against torch's computing it.
COMPLEX_ENTRIES = frozenset({"real", "imag", "conj", "conj_physical", "resolve_conj",
                             "view_as_real", "angle", "abs", "add", "sub", "mul",
                             "div.no_rounding_mode", "true_divide", "neg", "exp", "matmul", "mm",
                             "bmm", "mv", "dot", "vdot", "outer", "sum", "mean", "reshape",
                             "flip", "roll", "cat", "stack", "transpose", "permute",
                             "index_select", "squeeze", "unsqueeze", "expand", "repeat",
                             "where", "masked_fill", "square", "reciprocal", "diag",
                             "diagonal"})
_COMPLEX_DTYPES = (torch.complex64, torch.complex128)


def takes_complex(info: Any) -> bool:
    return info.name.startswith("fft.") or entry_key(info) in COMPLEX_ENTRIES


def tested_dtypes(info: Any) -> List[torch.dtype]:
    """float32 and float64, then float16, bfloat16, int64, int32 and bool, where the OpInfo
    supports them on the CPU, and one of uint8, int8 and int16 (chosen by a seed from the
    op's name, so the ops share them out; all three with TINYATTN_CONFORMANCE=all);
    complex64 and complex128 for the entries that take complex inputs (COMPLEX_ENTRIES)."""
    supported = info.supported_dtypes("cpu")
    small = [d for d in _MORE_DTYPES if d in supported]
    if small and not RUN_ALL:
        small = [small[_stable_seed(entry_key(info), "small ints") % len(small)]]
    complex_ = _COMPLEX_DTYPES if takes_complex(info) else ()
    return [d for d in _DTYPES + tuple(small) + complex_ if d in supported]


def reference_dtypes(info: Any) -> List[torch.dtype]:
    """The dtypes whose case also draws reference inputs (extremal values, large tensors:
    generating them costs up to a second per dtype). By default one floating dtype per op,
    chosen by a seed from the op's name, so the ops share out float32, float64, float16 and
    bfloat16; every tested dtype with TINYATTN_CONFORMANCE=all."""
    if info.reference_inputs_func is None:
        return []
    tested = tested_dtypes(info)
    if RUN_ALL:
        return tested
    floating = [d for d in tested if d.is_floating_point] or tested[:1]
    return [floating[_stable_seed(entry_key(info)) % len(floating)]] if floating else []


def _stable_seed(*parts: Any) -> int:
    return zlib.crc32(repr(parts).encode()) ^ SEED


def select_samples(samples: Sequence[Any], count: int, *key: Any) -> List[Any]:
    """``count`` of ``samples``, chosen by a seed made from ``key`` (the same every run):
    the first sample (usually the plainest) and ``count - 1`` others at random."""
    samples = list(samples)
    if len(samples) <= count:
        return samples
    rest = random.Random(_stable_seed(*key)).sample(range(1, len(samples)), count - 1)
    return [samples[0]] + [samples[i] for i in sorted(rest)]


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def generate(info: Any, kind: str, dtype: torch.dtype, requires_grad: bool) -> List[Any]:
    """Every sample of ``kind`` ("values", "reference", "gradients"), torch's RNG seeded."""
    seed(_stable_seed(entry_key(info), kind, str(dtype)) % (1 << 31))
    with quiet():
        if kind == "reference":
            if info.reference_inputs_func is None:
                return []
            plain = sum(1 for _ in info.sample_inputs("cpu", dtype,
                                                      requires_grad=requires_grad))
            seed(_stable_seed(entry_key(info), kind, str(dtype)) % (1 << 31))
            return list(info.reference_inputs("cpu", dtype,
                                              requires_grad=requires_grad))[plain:]
        return list(info.sample_inputs("cpu", dtype, requires_grad=requires_grad))


# ------------------------------------------------------------------ running one call
def describe(sample: Any) -> str:
    def short(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            return f"Tensor{tuple(value.shape)}:{str(value.dtype)[6:]}"
        if isinstance(value, (list, tuple)):
            inner = ", ".join(short(v) for v in value[:4])
            more = ", ..." if len(value) > 4 else ""
            return f"[{inner}{more}]" if isinstance(value, list) else f"({inner}{more})"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}={short(v)}" for k, v in value.items()) + "}"
        text = repr(value)
        return text if len(text) < 30 else text[:27] + "..."
    parts = [short(sample.input)] + [short(a) for a in sample.args]
    parts += [f"{k}={short(v)}" for k, v in sample.kwargs.items()]
    return ", ".join(parts)


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = text if len(text) < 160 else text[:157] + "..."
    return f"{type(exc).__name__}: {text}"


def _tiny_failure(exc: BaseException) -> str:
    """tinyattn's exception, with where it was raised when it looks like a crash."""
    crash = isinstance(exc, (AttributeError, NameError, UnboundLocalError, KeyError,
                             AssertionError)) or "numpy" in type(exc).__module__
    text = _error_text(exc)
    if crash:
        frames = traceback.extract_tb(exc.__traceback__)
        inside = [f for f in frames if "/tinyattn/" in f.filename]
        if inside:
            last = inside[-1]
            text += f" [at {os.path.basename(last.filename)}:{last.lineno}]"
    return text


def _call_torch(variant: Variant, sample: Any, inp: Any) -> Any:
    with quiet():
        return variant.torch_call(inp, *sample.args, **sample.kwargs)


def _convert(sample: Any) -> Tuple[Converter, Any, tuple, dict]:
    convert = Converter()
    inp = convert(sample.input)
    args = convert(tuple(sample.args))
    kwargs = convert(dict(sample.kwargs))
    return convert, inp, args, kwargs


def _clone(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    return value


# ------------------------------------------------------------------ the checks
def check_values(variant: Variant, sample: Any, values: bool = True,
                 gauge: bool = False) -> Optional[str]:
    """None when tinyattn's forward agrees with torch's on ``sample`` (with ``values=False``
    the values themselves are not compared: random numbers, uninitialised memory; with
    ``gauge=True`` they are compared through the sample's output_process_fn_grad, which
    removes the vectors' arbitrary signs: SIGN_GAUGE_ENTRIES)."""
    try:
        _, inp, args, kwargs = _convert(sample)
    except Unconvertible as exc:
        return f"the sample holds {exc}"
    torch_input = _clone(sample.input) if variant.in_place else sample.input
    try:
        expected = _call_torch(variant, sample, torch_input)
        torch_error = None
    except Exception as exc:  # noqa: BLE001 - torch refusing is a result to compare
        expected, torch_error = None, exc
    try:
        with quiet():
            actual = variant.tiny_call(inp, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        if torch_error is not None:
            return None
        return f"tinyattn raises {_tiny_failure(exc)}"
    if torch_error is not None:
        return f"torch raises {_error_text(torch_error)}; tinyattn returns {_kind(actual)}"
    try:
        assert_agrees(actual, expected, values=values and not gauge)
        if gauge and values:
            assert_agrees(_process(sample)(actual), _process(sample)(expected),
                          "output with the vectors' signs removed (output_process_fn_grad)")
        if variant.in_place and isinstance(torch_input, torch.Tensor):
            if (expected is torch_input) != (actual is inp):    # x += y on a number rebinds
                return "the in-place variant does not return its input"
            assert_agrees(inp, torch_input, "input after the in-place call", values=values)
    except AssertionError as exc:
        return str(exc).strip().replace("\n", " ")[:400]
    if values and not gauge:
        return _printed_differently(actual, expected)
    return None


_NUMBER = re.compile(r"(?<![A-Za-z_\d.])[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
                     r"|(?<![A-Za-z_])(?:nan|inf)(?![A-Za-z_])")    # not the 32 of int32


def _printed_differently(actual: Any, expected: Any) -> Optional[str]:
    """None when ``str()`` of a tensor result reads as torch's (under run-torch's names) with
    every number masked: the layout, ``size=``, ``dtype=`` and brackets (the numbers were
    compared above, with tolerances; a last digit may differ)."""
    if not (isinstance(actual, tinyattn.Tensor) and isinstance(expected, torch.Tensor)) \
            or expected.numel() > 1000:
        return None
    previous = printing.options.torch_names
    printing.options.torch_names = True
    try:
        ours = str(actual)
    finally:
        printing.options.torch_names = previous
    theirs = _torch_str(expected)

    def mask(text: str) -> str:
        return _NUMBER.sub("N", text).replace(" ", "").replace("\n", "")
    if mask(ours) != mask(theirs):
        return f"str(result): tinyattn {ours[:120]!r}, torch {theirs[:120]!r}"
    return None


_TORCH_STR: "dict[Any, str]" = {}


def _torch_str(tensor: torch.Tensor) -> str:
    """``str(tensor)``, remembered by everything it reads: the dtype, shape, device, layout,
    autograd state and the values' bytes. A case compares every variant (function, method,
    operator, in-place, aliases) on the same sample, and torch's results are then the same
    tensor again and again; torch's printer, a Python loop over the elements, was about a
    third of the values checks' CPU time. tinyattn's str() of each variant's own result is
    still made and compared every time."""
    try:
        plain = tensor.detach().resolve_conj().resolve_neg().contiguous().cpu()
        key = (tensor.dtype, tuple(tensor.shape), str(tensor.device), tensor.layout,
               tensor.requires_grad, type(tensor.grad_fn).__name__, type(tensor),
               plain.view(torch.uint8).numpy().tobytes() if plain.numel() else b"")
    except Exception:  # noqa: BLE001 - a tensor whose bytes cannot be read: print it
        return str(tensor)
    text = _TORCH_STR.get(key)
    if text is None:
        if len(_TORCH_STR) > 256:
            _TORCH_STR.clear()
        text = _TORCH_STR[key] = str(tensor)
    return text


def _kind(value: Any) -> str:
    return type(value).__name__


def _tensors(value: Any) -> List[Any]:
    if isinstance(value, (torch.Tensor, tinyattn.Tensor)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _process(sample: Any) -> Callable[[Any], Any]:
    process = sample.output_process_fn_grad
    return rebind(process) or process


def _upstream(shape: Tuple[int, ...], index: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed + index).standard_normal(shape)


def _loss(outputs: List[Any], framework: Any, seed: int) -> Any:
    """sum(out_i * g_i) over the outputs that require grad, g fixed by ``seed``."""
    total = None
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        g = _upstream(tuple(out.shape), i, seed)
        if out.is_complex():         # a real loss of a complex output: Re and Im weighted
            h = _upstream(tuple(out.shape), i + 1000, seed)       # apart (torch's convention
            make = torch.from_numpy if framework is torch else tinyattn.tensor  # for z.grad)
            term = (out.real * make(g).to(out.real.dtype)
                    + out.imag * make(h).to(out.real.dtype)).sum()
            total = term if total is None else total + term
            continue
        g = (torch.from_numpy(g) if framework is torch else tinyattn.tensor(g)).to(out.dtype)
        term = (out * g).sum()
        total = term if total is None else total + term
    return total


def check_gradients(variant: Variant, sample: Any) -> Optional[str]:
    """None when tinyattn's float64 gradients agree with torch's on ``sample``."""
    try:
        convert, inp, args, kwargs = _convert(sample)
    except Unconvertible as exc:
        return f"the sample holds {exc}"
    seed = _stable_seed(describe(sample)) % (1 << 31)
    try:
        with quiet():
            expected = _tensors(_process(sample)(variant.torch_call(
                sample.input, *sample.args, **sample.kwargs)))
    except Exception:  # noqa: BLE001 - torch refuses the sample: check_values compares that
        return None
    try:
        with quiet():
            actual = _tensors(_process(sample)(variant.tiny_call(inp, *args, **kwargs)))
    except Exception as exc:  # noqa: BLE001
        return f"tinyattn's forward raises {_tiny_failure(exc)}"
    if len(actual) != len(expected):
        return f"tinyattn gives {len(actual)} output tensors, torch {len(expected)}"
    for i, (a, e) in enumerate(zip(actual, expected)):
        if a.requires_grad != e.requires_grad:
            return (f"output {i}: requires_grad={a.requires_grad} where torch gives "
                    f"{e.requires_grad}")
    torch_loss = _loss(expected, torch, seed)
    if torch_loss is None:
        return None
    for t, _ in convert.pairs:      # a database may share one input among its samples
        t.grad = None               # (cartesian_prod's): no gradient carried over
    try:
        with quiet():
            torch_loss.backward()
    except Exception:  # noqa: BLE001 - torch has no derivative here: tinyattn may
        return None
    try:
        with quiet():
            _loss(actual, tinyattn, seed).backward()
    except Exception as exc:  # noqa: BLE001
        return f"tinyattn's backward raises {_tiny_failure(exc)}"
    for n, (t, ours) in enumerate(convert.pairs):
        if not t.requires_grad:
            continue
        want, got = t.grad, ours.grad
        if want is None or got is None:
            if (want is None) != (got is None):
                return (f"gradient of input tensor {n}: tinyattn gives "
                        f"{'None' if got is None else 'a tensor'}, torch "
                        f"{'None' if want is None else 'a tensor'}")
            continue
        try:
            assert_agrees(got, want, f"gradient of input tensor {n}")
        except AssertionError as exc:
            return str(exc).strip().replace("\n", " ")[:400]
    return None


def check_error(variant: Variant, error_input: Any) -> Optional[str]:
    """None when tinyattn raises on the error input (or cannot even be handed it) an
    exception of the type torch's database names (``ErrorInput.error_type``, a subclass
    counting, as ``assertRaises`` counts it): a program written for torch catches that
    type, and torch's own error test checks it."""
    sample = error_input.sample_input
    try:
        _, inp, args, kwargs = _convert(sample)
    except Exception:  # noqa: BLE001 - tinyattn cannot even hold the sample's values
        return None            # (a complex tensor, 65 dims): no such program runs here
    want = error_input.error_type
    try:
        with quiet():
            result = variant.tiny_call(inp, *args, **kwargs)
            _tensors(result)
    except Exception as exc:  # noqa: BLE001 - compared with the type torch raises
        if isinstance(exc, want) or not _torch_raises(variant, sample, want):
            return None
        return (f"tinyattn raises {_tiny_failure(exc)} where torch raises {want.__name__} "
                f"matching {error_input.error_regex!r}")
    return (f"tinyattn returns {_kind(result)} where torch raises "
            f"{want.__name__} matching {error_input.error_regex!r}")


def _torch_raises(variant: Variant, sample: Any, want: type) -> bool:
    """Does torch itself raise ``want`` here? (A few error inputs name a type torch no
    longer raises; the harness holds tinyattn to what torch does.)"""
    try:
        with quiet():
            variant.torch_call(sample.input, *sample.args, **sample.kwargs)
    except Exception as exc:  # noqa: BLE001
        return isinstance(exc, want)
    return False


def out_dtype(entry: "OpEntry") -> Optional[torch.dtype]:
    """The dtype of an entry's ``out=`` case: float32 (else its first tested dtype) where the
    OpInfo says ``supports_out`` and tinyattn has its function; None where there is none."""
    if not entry.info.supports_out or entry.function is None \
            or entry.function.kind != "function":
        return None
    tested = tested_dtypes(entry.info)
    if not tested:
        return None
    return torch.float32 if torch.float32 in tested else tested[0]


def _empty_like_result(value: Any, make: Callable[[Any], Any]) -> Any:
    if isinstance(value, torch.Tensor):
        return make(value)
    if isinstance(value, (list, tuple)) and value and \
            all(isinstance(v, torch.Tensor) for v in value):
        return tuple(make(v) for v in value)
    return None


def check_out(variant: Variant, sample: Any, values: bool = True,
              gauge: bool = False) -> Optional[str]:
    """None when ``fn(..., out=t)`` agrees in tinyattn and torch: both write the result into
    ``t`` (an empty tensor of the result's shape and dtype, a tuple for (values, indices))
    and return it, or both raise. Samples whose result torch cannot give an ``out=`` for
    (a number, a list) are not compared. With ``gauge=True`` (SIGN_GAUGE_ENTRIES) the values
    are compared as check_values compares them: through the sample's output_process_fn_grad,
    which removes the vectors' arbitrary signs (LAPACK's choice, not the op's meaning)."""
    if "out" in sample.kwargs:
        return None
    try:
        with quiet():
            expected = variant.torch_call(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001 - torch refuses the sample itself: check_values
        return None
    torch_out = _empty_like_result(expected, lambda t: torch.empty_like(
        t, memory_format=torch.contiguous_format).detach())
    if torch_out is None:
        return None
    try:
        _, inp, args, kwargs = _convert(sample)
        tiny_out = _empty_like_result(expected, lambda t: tinyattn.zeros(
            tuple(t.shape), dtype=numpy_dtype(t.dtype)))
    except Unconvertible as exc:
        return f"the sample holds {exc}"
    try:
        with quiet():
            returned = variant.torch_call(sample.input, *sample.args, out=torch_out,
                                          **sample.kwargs)
        torch_error = None
    except Exception as exc:  # noqa: BLE001
        returned, torch_error = None, exc
    try:
        with quiet():
            got = variant.tiny_call(inp, *args, out=tiny_out, **kwargs)
    except Exception as exc:  # noqa: BLE001
        if torch_error is not None:
            return None
        return f"out=: tinyattn raises {_tiny_failure(exc)}"
    if torch_error is not None:
        return f"out=: torch raises {_error_text(torch_error)}; tinyattn returns {_kind(got)}"
    same = (lambda a, b: a is b) if not isinstance(tiny_out, tuple) else \
        (lambda a, b: isinstance(a, tuple) and all(x is y for x, y in zip(a, b)))
    if returned is None:            # a list out= (split_with_sizes_copy): torch returns None
        if got is not None:
            return f"out=: torch returns None; tinyattn returns {_kind(got)}"
        got, returned = tiny_out, torch_out
    if not same(got, tiny_out):
        return "out=: tinyattn does not return the out= tensor"
    try:
        assert_agrees(tiny_out, torch_out if not isinstance(torch_out, tuple)
                      else list(torch_out), "the out= tensor", values=values and not gauge)
        assert_agrees(got, returned if not isinstance(returned, tuple) else list(returned),
                      "the result of out=", values=values and not gauge)
        if gauge and values:
            assert_agrees(_process(sample)(got), _process(sample)(returned),
                          "the result of out= with the vectors' signs removed "
                          "(output_process_fn_grad)")
    except AssertionError as exc:
        return str(exc).strip().replace("\n", " ")[:400]
    return None


def _write_in_place(t: Any) -> None:
    """An in-place write that keeps the values and bumps the version counter."""
    if "bool" in str(t.dtype):
        t.copy_(t.clone())
    else:
        t.mul_(1)


def check_saves(variant: Variant, sample: Any) -> List[str]:
    """For each tensor input and each output: does an in-place write to it after the op make
    backward raise in tinyattn exactly when it raises in torch? Returns the differences."""
    differences: List[str] = []
    targets = _save_targets(variant, sample)
    for target in targets:
        torch_raised = _saves_run(variant, sample, target, "torch")
        if torch_raised is None:
            continue                # torch refuses the write itself or has no backward
        tiny_raised = _saves_run(variant, sample, target, "tinyattn")
        if tiny_raised != torch_raised:
            what = "raises" if torch_raised else "does not raise"
            differences.append(f"write to {target[0]} {target[1]} after the op: torch's "
                               f"backward {what}, tinyattn's {tiny_raised_text(tiny_raised)}")
    return differences


def tiny_raised_text(raised: Any) -> str:
    if raised is True:
        return "raises"
    if raised is False:
        return "does not"
    return str(raised)


def _save_targets(variant: Variant, sample: Any) -> List[Tuple[str, int]]:
    try:
        with quiet():
            outputs = _tensors(variant.torch_call(_nonleaf(sample.input, torch),
                                                  *_nonleaf(sample.args, torch),
                                                  **_nonleaf(sample.kwargs, torch)))
    except Exception:  # noqa: BLE001
        return []
    count = len(_tensors([sample.input, sample.args, list(sample.kwargs.values())]))
    return [("input", i) for i in range(count)] + [("output", i) for i in range(len(outputs))
                                                   if outputs[i].requires_grad]


def _nonleaf(value: Any, framework: Any) -> Any:
    """Each leaf that requires grad replaced by ``leaf * 1`` (a leaf cannot be written in
    place while gradients are recorded), in ``framework``."""
    if isinstance(value, (torch.Tensor, tinyattn.Tensor)):
        return value * 1 if value.requires_grad else value.clone()
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_nonleaf(v, framework) for v in value)
    if isinstance(value, dict):
        return {k: _nonleaf(v, framework) for k, v in value.items()}
    return value


def _saves_run(variant: Variant, sample: Any, target: Tuple[str, int], side: str) -> Any:
    """True when backward raised "modified by an inplace operation" after the write, False
    when it ran. On torch's side None when torch refused the program some other way (the
    write itself, using a view whose base changed, no derivative): nothing to compare. On
    tinyattn's side a string says what else went wrong."""
    if side == "torch":
        inp, args, kwargs = sample.input, tuple(sample.args), dict(sample.kwargs)
        call, framework = variant.torch_call, torch
    else:
        try:
            _, inp, args, kwargs = _convert(sample)
        except Unconvertible:
            return "cannot be handed the sample"
        call, framework = variant.tiny_call, tinyattn
    inp, args, kwargs = (_nonleaf(v, framework) for v in (inp, args, kwargs))
    seed = _stable_seed(describe(sample)) % (1 << 31)
    try:
        with quiet():
            outputs = _tensors(_process(sample)(call(inp, *args, **kwargs)))
    except Exception as exc:  # noqa: BLE001
        return None if side == "torch" else f"raises in the forward: {_tiny_failure(exc)}"
    kind, index = target
    tensors = _tensors([inp, list(args), list(kwargs.values())]) if kind == "input" \
        else outputs
    if index >= len(tensors):
        return None if side == "torch" else f"has no {kind} {index}"
    try:
        with quiet():
            _write_in_place(tensors[index])
            loss = _loss(outputs, framework, seed)
            if loss is None:
                return None if side == "torch" else "has no output that requires grad"
            loss.backward()
    except Exception as exc:  # noqa: BLE001
        saved = "modified by an inplace operation" in str(exc)
        if side == "torch":
            return True if saved else None
        return True if saved else f"raises {_tiny_failure(exc)}"
    return False
