"""The op-table rows of ops/elementwise.py: each row names an op, the function under test, a
NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table)."""
from __future__ import annotations

from typing import Callable, List, Sequence

import numpy as np
import scipy.special

from .. import functional as F, ops
from ..tensor import Tensor
from .cases import PRODUCTS, normal_cases, normal_inputs, op_case, shapes_text, unary_cases
from .spec import OpCase, OpSpec, from_pairs


__all__ = ["ROWS"]


def _binary_cases(positive_b: bool = False) -> Callable[[np.random.Generator], List[OpCase]]:
    def make(rng: np.random.Generator) -> List[OpCase]:
        pairs = [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1)), ((5,), ())]
        out = []
        for sa, sb in pairs:
            b = rng.standard_normal(sb)
            if positive_b:
                b = np.abs(b) + 0.5
            out.append(op_case(shapes_text(sa, sb), rng.standard_normal(sa), np.asarray(b)))
        return out
    return make


def _away_from_zero(rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
    """Normal samples pushed away from 0, where relu's kink would fool finite differences."""
    x = rng.standard_normal(shape)
    return x + np.sign(x) * 0.1


def _gelu_ref(x: np.ndarray, approximate: str) -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + scipy.special.erf(x / np.sqrt(2)))


def _device_round_trip(x: Tensor) -> Tensor:
    """Convert there and back: x moved to the strict stand-in device (or, when x is already
    on a device, to the CPU), scaled there, and moved home; the gradient takes the same trip."""
    from .. import strict_device  # noqa: PLC0415 - a stand-in device, registered on demand
    strict_device.enable()
    away = "strict" if x.device == "cpu" else "cpu"
    return ops.convert(ops.convert(x, device=away) * 3.0, device=x.device)


ROWS: List[OpSpec] = [
    OpSpec("add", ops.add, np.add, _binary_cases(), "broadcasting"),
    OpSpec("sub", ops.sub, np.subtract, _binary_cases(), "broadcasting"),
    OpSpec("mul", ops.mul, np.multiply, _binary_cases(), "broadcasting"),
    OpSpec("div", ops.div, np.divide, _binary_cases(positive_b=True), "broadcasting"),
    OpSpec("neg", ops.neg, np.negative, unary_cases(), "elementwise"),
    OpSpec("pow", lambda x: ops.pow(x, 2.5), lambda x: x ** 2.5, unary_cases(low=0.3),
           "elementwise"),
    OpSpec("exp", ops.exp, np.exp, unary_cases(), "elementwise"),
    OpSpec("log", ops.log, np.log, unary_cases(low=0.2), "elementwise"),
    OpSpec("sqrt", ops.sqrt, np.sqrt, unary_cases(low=0.2), "elementwise"),
    OpSpec("tanh", ops.tanh, np.tanh, unary_cases(), "elementwise"),
    OpSpec("relu", ops.relu, lambda x: np.maximum(x, 0),
           lambda rng: [op_case("(3, 4)", _away_from_zero(rng, (3, 4)))], "elementwise"),
    OpSpec("gelu", F.gelu, lambda x: _gelu_ref(x, "none"), unary_cases(), "gelu"),
    OpSpec("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
           lambda x: _gelu_ref(x, "tanh"), unary_cases(), "gelu"),
    OpSpec("convert", _device_round_trip, lambda x: x * 3.0, unary_cases(), "convert"),
] + from_pairs([
    ("outer", ops.outer, np.outer, normal_inputs((3,), (4,)), PRODUCTS),
    ("lerp", ops.lerp, lambda a, b, w: a + w * (b - a), normal_inputs((3, 4), (3, 4), (4,)),
     PRODUCTS),
    ("lerp_scalar", lambda a, b: ops.lerp(a, b, 0.75), lambda a, b: a + 0.75 * (b - a),
     normal_inputs((3, 4), (3, 4)), PRODUCTS),
    ("clone", ops.clone, np.copy, normal_cases((3, 4)), "clone-and-clamp"),
    ("clamp", lambda x: ops.clamp(x, -0.5, 0.8), lambda x: np.clip(x, -0.5, 0.8),
     normal_cases((4, 5)), "clone-and-clamp"),
])
