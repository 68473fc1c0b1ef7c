"""torch's type promotion, checked over torch's own list of elementwise ops.

op_db's samples mostly give both operands one dtype, so they say little about promotion.
Here every BinaryUfuncInfo and UnaryUfuncInfo entry of op_db that tinyattn has (by torch's
name, through run-torch's name table) is called on operands of every pair of dtypes (bool,
uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64), as tensors with
dimensions, as 0-d tensors (which do not widen a tensor of their own category) and as Python
numbers (int, float, bool). tinyattn must give torch's result dtype and torch's values, or
raise where torch raises. Where torch raises and tinyattn computes (a Python number where
torch asks for a tensor, a dtype torch has no kernel for), tinyattn's answer is a strict
extension (docs/pytorch.md) and is not compared.

By default each op draws a fixed sample of its cases (the suite's budget on two cores);
``TINYATTN_CONFORMANCE=all`` runs all of them (about 30,000 cases, a minute). The in-place
methods (``x.add_(y)``) are checked the same way: the tensor written into keeps its dtype, and
only a result of a higher category (a float into an integer tensor) is refused.
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import numpy as np
import torch

import tinyattn

from .torch_database import op_db
from .torch_names import resolve, tensor_method

RUN_ALL = os.environ.get("TINYATTN_CONFORMANCE", "") == "all"
SAMPLE_PER_OP = 12

DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64)
NUMBERS = (2, 2.5, True)
# torch's Tensor.double(), .half(), ... are conversions, not elementwise ops
CONVERSIONS = ("bfloat16", "bool", "double", "float", "half", "int", "long", "short", "byte",
               "char", "cfloat", "chalf", "cdouble")

Operand = Tuple  # ("tensor", dtype, is_0d) or ("number", value)


@dataclass(frozen=True)
class PromotionCase:
    op: str
    operands: Tuple[Operand, ...]

    @property
    def id(self) -> str:
        def name(operand: Operand) -> str:
            if operand[0] == "number":
                return repr(operand[1])
            return str(operand[1]).replace("torch.", "") + ("_0d" if operand[2] else "")
        return f"{self.op}({', '.join(name(o) for o in self.operands)})"


def _entries(kind: type) -> List[Any]:
    return [op for op in op_db() if isinstance(op, kind) and not op.variant_test_name
            and op.name not in CONVERSIONS and resolve(op.name) is not None]


def promotion_cases() -> List[PromotionCase]:
    from torch.testing._internal.opinfo.core import BinaryUfuncInfo, UnaryUfuncInfo
    cases: List[PromotionCase] = []
    for op in _entries(BinaryUfuncInfo):
        mine = [(("tensor", a, za), ("tensor", b, zb)) for a in DTYPES for b in DTYPES
                for za, zb in ((False, False), (False, True), (True, False))]
        mine += [(("tensor", a, False), ("number", n)) for a in DTYPES for n in NUMBERS]
        if not op.name.startswith("__"):           # torch.add(2, x): number first
            mine += [(("number", n), ("tensor", a, False)) for a in DTYPES for n in NUMBERS]
        cases += _sample(op.name, mine)
        in_place = op.name.split(".")[-1] + "_"          # x.add_(y): x keeps its dtype
        if hasattr(torch.Tensor, in_place) and tensor_method(in_place) is not None:
            cases += _sample("Tensor." + in_place, [o for o in mine if o[0][0] == "tensor"
                                                    and not o[0][2]])
    # where(condition, input, other) promotes input and other as a binary op does
    cases += _sample("where", [(("tensor", a, za), ("tensor", b, zb)) for a in DTYPES
                               for b in DTYPES for za, zb in ((False, True), (True, False))]
                     + [(("tensor", a, False), ("number", n)) for a in DTYPES for n in NUMBERS])
    for op in _entries(UnaryUfuncInfo):
        cases += _sample(op.name, [(("tensor", a, z),) for a in DTYPES for z in (False, True)])
    return cases


def _sample(name: str, operand_lists: list) -> List[PromotionCase]:
    if not RUN_ALL and len(operand_lists) > SAMPLE_PER_OP:
        operand_lists = random.Random(name).sample(operand_lists, SAMPLE_PER_OP)
    return [PromotionCase(name, tuple(o)) for o in operand_lists]


def _values(dtype: torch.dtype, is_0d: bool, position: int) -> Any:
    if dtype == torch.bool:
        values = [True, True, False]
    else:                                  # positive, nonzero: in every op's domain
        values = [[3, 2, 5], [2, 1, 3]][position % 2]
    return values[0] if is_0d else values


def _call(library: Any, function: Callable, operands: Tuple[Operand, ...]):
    args = []
    for position, operand in enumerate(operands):
        if operand[0] == "number":
            args.append(operand[1])
            continue
        dtype = operand[1] if library is torch else getattr(
            tinyattn, str(operand[1]).replace("torch.", ""))
        args.append(library.tensor(_values(operand[1], operand[2], position), dtype=dtype))
    try:
        return function(*args), None
    except Exception as error:  # noqa: BLE001 - any error torch or tinyattn raises
        return None, error


def _torch_op(name: str) -> Callable:
    if name.startswith("Tensor."):
        return _returning_self(getattr(torch.Tensor, name[len("Tensor."):]))
    if name == "where":
        return lambda a, b: torch.where(torch.tensor([True, False, True]), a, b)
    return next(op.op for op in op_db() if op.name == name and not op.variant_test_name)


def _returning_self(method: Callable) -> Callable:
    def call(x: Any, *args: Any) -> Any:
        method(x, *args)
        return x
    return call


def _tinyattn_op(name: str) -> Callable:
    if name.startswith("Tensor."):
        return _returning_self(tensor_method(name[len("Tensor."):]))
    where = resolve("where")
    if name == "where":
        return lambda a, b: where(tinyattn.tensor([True, False, True]), a, b)
    return resolve(name)


def compare(case: PromotionCase, function: Optional[Callable] = None) -> str:
    """'' when tinyattn agrees with torch on ``case``; else what differs."""
    expected, torch_error = _call(torch, _torch_op(case.op), case.operands)
    got, error = _call(tinyattn, function or _tinyattn_op(case.op), case.operands)
    if torch_error is not None:
        return ""      # torch refuses: tinyattn refusing or computing (an extension) is fine
    if error is not None:
        return f"tinyattn raises {type(error).__name__}: {error} where torch computes"
    if not isinstance(expected, torch.Tensor):
        return ""
    if not hasattr(got, "dtype"):
        return f"tinyattn returns {type(got).__name__} where torch returns a tensor"
    want_dtype = str(expected.dtype).replace("torch.", "")
    got_dtype = str(got.dtype).replace("tinyattn.", "")
    if want_dtype != got_dtype:
        return f"dtype {got_dtype} where torch gives {want_dtype}"
    want = expected.double().numpy() if expected.dtype != torch.bool else expected.numpy()
    have = np.asarray(got.data).astype(want.dtype)
    tolerance = 1e-2 if "16" in want_dtype else 1e-5
    if want.shape != have.shape or not np.allclose(have, want, rtol=tolerance,
                                                   atol=tolerance, equal_nan=True):
        return f"values {have.tolist()} where torch gives {want.tolist()}"
    return ""
