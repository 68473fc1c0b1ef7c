"""The op-table rows of ops/complex_numbers.py. The table's inputs and outputs are real, so
each row reaches complex numbers through ``view_as_complex`` (pairs along a last axis of 2)
and comes back through ``view_as_real``, ``real``/``imag``, ``abs`` or ``angle``: the float64
gradcheck then checks torch's convention for complex gradients (a real loss, whose gradient in
the real and imaginary parts is the gradient of the real pairs)."""
from __future__ import annotations

from typing import List

import numpy as np

from .. import ops
from .cases import case_pair
from .spec import OpSpec, from_pairs

__all__ = ["ROWS"]


def _c(x):
    return ops.view_as_complex(x)


def _r(z):
    return ops.view_as_real(z)


def _nc(x: np.ndarray) -> np.ndarray:
    return x[..., 0] + 1j * x[..., 1]


def _nr(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1)


def _pairs(*shapes):
    return lambda rng: [case_pair(" ".join(str(s) for s in shapes),
                                  *(rng.standard_normal(s) for s in shapes))]


def _away_from_zero(shape):
    def make(rng):
        x = rng.standard_normal(shape)
        x[..., 0] = np.abs(x[..., 0]) + 0.3        # right half plane: off angle's branch cut
        return [case_pair(str(shape), x)]
    return make


def _positive_and_normal(shape):
    return lambda rng: [case_pair(f"{shape} {shape}", rng.random(shape) + 0.5,
                                  rng.standard_normal(shape))]


ROWS: List[OpSpec] = from_pairs([
    ("complex.real_imag", lambda x: ops.real(_c(x)) * 2.0 + ops.imag(_c(x)) * 3.0,
     lambda x: 2.0 * x[..., 0] + 3.0 * x[..., 1], _pairs((3, 4, 2)), "complex-numbers"),
    ("complex.conj", lambda x: _r(ops.conj(_c(x)) * _c(x)[0]),
     lambda x: _nr(np.conj(_nc(x)) * _nc(x)[0]), _pairs((3, 4, 2)), "complex-numbers"),
    ("complex.abs", lambda x: ops.abs(_c(x)), lambda x: np.abs(_nc(x)),
     _away_from_zero((3, 4, 2)), "complex-numbers"),
    ("complex.angle", lambda x: ops.angle(_c(x)), lambda x: np.angle(_nc(x)),
     _away_from_zero((3, 4, 2)), "complex-numbers"),
    ("complex.complex", lambda a, b: _r(ops.complex(a, b) * ops.complex(b, a)),
     lambda a, b: _nr((a + 1j * b) * (b + 1j * a)), _pairs((3, 4), (3, 4)),
     "complex-numbers"),
    ("complex.polar", lambda r, t: _r(ops.polar(r, t)),
     lambda r, t: np.stack([r * np.cos(t), r * np.sin(t)], -1), _positive_and_normal((3, 4)),
     "complex-numbers"),
    ("complex.arithmetic",
     lambda x, y: _r(_c(x) * _c(y) - ops.exp(_c(x)) / (_c(y) + 3.0) + 0.5j * _c(x)),
     lambda x, y: _nr(_nc(x) * _nc(y) - np.exp(_nc(x)) / (_nc(y) + 3.0) + 0.5j * _nc(x)),
     lambda rng: [case_pair("(3, 4, 2) (3, 4, 2)", rng.standard_normal((3, 4, 2)),
                            rng.standard_normal((3, 4, 2)) * 0.3)], "complex-numbers"),
    ("complex.real_times_complex", lambda a, x: _r(a * _c(x) + ops.abs(_c(x)).sum()),
     lambda a, x: _nr(a * _nc(x) + np.abs(_nc(x)).sum()),
     lambda rng: [case_pair("(3, 4) (3, 4, 2)", rng.standard_normal((3, 4)),
                            rng.standard_normal((3, 4, 2)) + 2.0)], "complex-numbers"),
    ("complex.matmul", lambda a, b: _r(ops.matmul(_c(a), _c(b))),
     lambda a, b: _nr(_nc(a) @ _nc(b)), _pairs((3, 4, 2), (4, 2, 2)), "complex-numbers"),
])
