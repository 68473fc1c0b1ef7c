"""torch's keyword names on the whole public surface: every function and Tensor method that
``import torch`` gives under run-torch accepts the parameter names torch's own signature has
(input, other, dim, keepdim, out=, dtype=, ...), read from the installed torch:
``inspect.signature`` where torch has one, else the signature lines of its docstring, else
``torch.overrides.get_testing_overrides()``. Deliberate exceptions are listed with reasons.
"""
from __future__ import annotations

import inspect
import re
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.tensor import Tensor
from tinyattn.torch_shim import MODULES, exposed_names

torch = pytest.importorskip("torch", reason="torch's signatures are the reference")
import torch.nn.functional as TF  # noqa: E402

_FACTORY = "tinyattn's factories: the *_like/rand/randint/randperm ones take no out="
_MEMORY = "tinyattn's memory is always dense row-major: no memory_format / out_dtype options"
EXCEPTIONS = {
    # names torch accepts that tinyattn does not, with the reason
    **{f"torch.{n}": {"out", "memory_format"} for n in (
        "empty_like", "full_like", "ones_like", "zeros_like", "rand", "rand_like", "randn_like",
        "randint", "randint_like", "randperm")},
    # these take out= (rows39, out39)
    **{f"torch.{n}": {"memory_format"} for n in (
        "arange", "empty", "eye", "full", "linspace", "logspace", "ones", "zeros", "randn",
        "multinomial")},
    "torch.randint": {"out", "low", "high"},        # (low, high, size) positional
    "torch.randint_like": {"memory_format", "low", "high"},
    "torch.clone": {"memory_format"}, "Tensor.clone": {"memory_format"},
    "Tensor.contiguous": {"memory_format"}, "Tensor.is_contiguous": {"memory_format"},
    **{f"{k}.{n}": {"memory_format"} for k in ("Tensor",) for n in (
        "bool", "cpu", "cuda", "double", "float", "half", "int", "long")},
    **{f"{k}.{n}": {"out_dtype"} for k in ("torch", "Tensor")
       for n in ("mm", "bmm", "addmm", "baddbmm", "spmm")},
    "torch.max": {"other"}, "torch.min": {"other"},            # use torch.maximum/minimum
    # not yet: relu_'s argument named input (it is x); to fix
    "torch.relu_": {"input"},
    "Tensor.max": {"other"}, "Tensor.min": {"other"},
    "torch.save": {"f", "pickle_module", "pickle_protocol", "_use_new_zipfile_serialization",
                   "_disable_byteorder_record"},                # no pickle: path or file first
    "torch.load": {"f", "pickle_module", "mmap"},
    "torch.set_rng_state": {"new_state"},
    "torch.from_numpy": {"ndarray"},
    "torch.logsumexp": {"names"}, "Tensor.logsumexp": {"names"},   # no named tensors
    "F.softmax": {"_stacklevel"}, "F.log_softmax": {"_stacklevel"},
    "torch.permute": {"dims"}, "Tensor.permute": {"dims"},     # permute(x, *dims) only
    "torch.split": {"tensor"}, "Tensor.split": {"split_size", "tensor"},
    # torch documents these with torch.split's signature (tensor, split_size_or_sections):
    # tinyattn takes torch's own parameters (input, split_sizes/split_size, dim)
    **{f"{k}.{n}": {"split_size_or_sections", "tensor"} for k in ("torch", "Tensor")
       for n in ("split_with_sizes", "unsafe_split")},
    "Tensor.expand": {"size"}, "Tensor.reshape": {"shape"}, "Tensor.view": {"shape"},
    "torch.reshape": {"shape"}, "Tensor.repeat": {"repeats"},
    "torch.swapdims": {"axis0", "axis1"}, "Tensor.swapdims": {"axis0", "axis1"},
    "Tensor.swapaxes": {"axis0", "axis1"},
    "Tensor.uniform_": {"from", "to"}, "Tensor.type": {"non_blocking"},
    "Tensor.copy_": {"non_blocking"}, "Tensor.numpy": {"force"},
    "Tensor.type_as": {"tensor"},
    "Tensor.div_": {"value"}, "Tensor.true_divide_": {"value"}, "Tensor.mul_": {"value"},
    "Tensor.fmod_": {"divisor"}, "Tensor.remainder_": {"divisor"},
    "Tensor.floor_divide_": {"value"},
    **{f"Tensor.new_{n}": {"size"} for n in ("empty", "ones", "zeros", "full")},
    # torch documents layout=/pin_memory= for new_tensor, but its parser refuses both
    "Tensor.new_tensor": {"size", "layout", "pin_memory"},
    "torch.where": {"x", "y"},       # the overrides table's outdated names (input, other work)
    "torch.set_num_threads": {"int"}, "torch.set_default_dtype": {"d"},   # positional in use
    "torch.dropout": {"inplace"},    # torch.dropout(input, p, train): F.dropout has inplace=
    "Tensor.divide_": {"value"}, "Tensor.multiply_": {"value"},   # as div_ and mul_
    "Tensor.swapaxes_": {"axis0", "axis1"},     # as Tensor.swapaxes: transpose_'s dim0, dim1
    "Tensor.random_": {"from"},                 # as uniform_: `from` is Python's keyword
}


def _doc_names(fn, name):
    """Parameter names from the lines of fn's docstring that read like ``name(a, b, *, c)``."""
    names = []
    for line in (getattr(fn, "__doc__", None) or "").splitlines():
        line = line.strip()
        if line.startswith(".. function::"):
            line = line[len(".. function::"):].strip()
        match = re.match(rf"^(?:torch\.)?{re.escape(name)}\((.*)\)\s*(->.*)?$", line)
        if not match:
            continue
        for part in match.group(1).split(","):
            word = part.split("=")[0].split(":")[0].strip().strip("*").strip()
            if re.match(r"^[a-z_][a-z0-9_]*$", word) and word not in names \
                    and word not in ("args", "kwargs"):
                names.append(word)
    return names or None


def torch_names(fn, name):
    try:
        return [p.name for p in inspect.signature(fn).parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        pass
    names = _doc_names(fn, name)
    if names is not None:
        return names
    from torch.overrides import get_testing_overrides
    lam = get_testing_overrides().get(fn)
    if lam is None:
        return None
    return [p.name for p in inspect.signature(lam).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def accepted(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return {p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _pairs():
    pairs = []
    shim = MODULES["torch"].shim_names          # what run-torch answers first (torch.load, ...)
    for name in exposed_names("torch"):
        mine, theirs = shim.get(name, getattr(ta, name, None)), getattr(torch, name, None)
        if callable(mine) and callable(theirs) and not inspect.isclass(mine) \
                and not inspect.ismodule(mine) and not inspect.isclass(theirs):
            pairs.append((f"torch.{name}", mine, theirs, name, False))
    for name in exposed_names("torch.nn.functional"):
        mine, theirs = getattr(F, name, None), getattr(TF, name, None)
        if callable(mine) and callable(theirs):
            pairs.append((f"F.{name}", mine, theirs, name, False))
    for name in sorted(dir(Tensor)):
        mine = getattr(Tensor, name)
        theirs = getattr(torch, name, None) or getattr(torch.Tensor, name, None)
        if not name.startswith("_") and callable(mine) and not isinstance(mine, property) \
                and callable(theirs) and not inspect.isclass(theirs):
            pairs.append((f"Tensor.{name}", mine, theirs, name, True))
    return pairs


def mismatches():
    found = {}
    for label, mine, theirs, name, method in _pairs():
        want, have = torch_names(theirs, name), accepted(mine)
        if want is None or have is None:
            continue
        missing = {n for n in want if n not in have and n != "self"}
        if method:
            missing -= {"input", "out"}         # a method's input is self; it takes no out=
        missing -= EXCEPTIONS.get(label, set())
        if missing:
            found[label] = sorted(missing)
    return found


def test_every_public_function_accepts_torchs_keyword_names():
    found = mismatches()
    assert not found, f"{len(found)} functions lack torch's keyword names: {found}"


def test_the_check_sees_a_missing_keyword():
    """Negative control: a function without torch's names is reported."""
    def matmul(a, b):
        return a @ b
    assert accepted(matmul) == {"a", "b"}
    assert {"input", "other"} <= set(torch_names(torch.matmul, "matmul"))


def test_keyword_calls_give_the_positional_results():
    a, b = ta.tensor([[1.0, 2.0], [3.0, 4.0]]), ta.tensor([[0.5], [1.5]])
    assert ta.equal(ta.matmul(input=a, other=b), a @ b)
    assert ta.equal(a.matmul(other=b), a @ b)
    assert ta.equal(ta.sum(input=a, dim=1, keepdim=True), a.sum(1, keepdim=True))
    assert ta.equal(ta.add(input=a, other=a, alpha=2), a + 2 * a)
    assert ta.softmax(input=a, dim=-1, dtype=ta.float64).dtype == np.float64
    assert ta.equal(F.linear(input=a, weight=a), a @ a.T)
    with pytest.raises(TypeError, match="two names"):
        ta.matmul(a, a=a, input=a)


def test_out_writes_into_the_given_tensor_and_refuses_under_autograd():
    a = ta.tensor([1.0, 2.0])
    target = ta.zeros(2)
    assert ta.add(a, a, out=target) is target and target.tolist() == [2.0, 4.0]
    resized = ta.zeros(5)
    with pytest.warns(UserWarning, match=r"resized since it had shape \[5\].*shape \[3\]"):
        ta.exp(ta.zeros(3), out=resized)
    assert resized.tolist() == [1.0, 1.0, 1.0]                  # resized, as torch does
    empty = ta.zeros(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                            # no warning: out was empty
        ta.exp(ta.zeros(3), out=empty)
    values, indices = ta.zeros(2), ta.zeros(2, dtype=ta.int64)
    ta.topk(ta.tensor([3.0, 1.0, 2.0]), 2, out=(values, indices))
    assert values.tolist() == [3.0, 2.0] and indices.tolist() == [0, 2]
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ta.mul(ta.ones(2, requires_grad=True), 2.0, out=ta.zeros(2))
    with pytest.raises(RuntimeError, match="can't be cast"):
        ta.div(a, 3.0, out=ta.zeros(2, dtype=ta.int64))


def test_inplace_keyword_writes_into_the_input():
    x = ta.tensor([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0]
