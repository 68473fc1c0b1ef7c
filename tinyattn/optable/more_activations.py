"""The op-table rows of ops/more_activations.py: each row names an op, the function under test,
a NumPy reference and its input cases (tinyattn/optable/__init__.py assembles the table).
Inputs keep away from each activation's kinks (0, +-3, +-lambd, 6, the threshold), where the
one-sided derivatives differ and a finite difference straddles both."""
from __future__ import annotations

from typing import Callable, List, Sequence

import numpy as np

from .. import functional as F
from .spec import Case, OpSpec, from_pairs
from .cases import case_pair

__all__ = ["ROWS"]

MORE_ACTIVATIONS = "more-activations"
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _away_from(kinks: Sequence[float], *shapes, scale: float = 3.0) -> Callable[..., List[Case]]:
    """Normal draws times ``scale``, each within 0.05 of a kink moved 0.1 off it."""
    def make(rng: np.random.Generator) -> List[Case]:
        out = []
        for shape in shapes:
            x = rng.standard_normal(shape) * scale
            for k in kinks:
                x = np.where(np.abs(x - k) < 0.05, x + 0.1, x)
            out.append(case_pair(str(shape), x))
        return out
    return make


def _prelu_cases(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((2, 3, 4))
    x = np.where(np.abs(x) < 0.05, x + 0.1, x)
    return [case_pair("(2, 3, 4) weight (3,)", x, rng.uniform(0.1, 0.5, 3)),
            case_pair("(2, 3, 4) weight (1,)", x, rng.uniform(0.1, 0.5, 1))]


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0, x)


def _softmin_ref(x: np.ndarray) -> np.ndarray:
    e = np.exp(-x - (-x).max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


ROWS: List[OpSpec] = from_pairs([
    ("relu6", F.relu6, lambda x: np.clip(x, 0, 6), _away_from((0, 6), (3, 4), scale=4.0),
     MORE_ACTIVATIONS),
    ("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6,
     _away_from((-3, 3), (3, 4)), MORE_ACTIVATIONS),
    ("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
     _away_from((-3, 3), (3, 4)), MORE_ACTIVATIONS),
    ("hardshrink", lambda x: F.hardshrink(x, 0.7), lambda x: np.where(np.abs(x) > 0.7, x, 0),
     _away_from((-0.7, 0.7), (3, 4), scale=1.0), MORE_ACTIVATIONS),
    ("softshrink", lambda x: F.softshrink(x, 0.7),
     lambda x: np.where(x > 0.7, x - 0.7, np.where(x < -0.7, x + 0.7, 0)),
     _away_from((-0.7, 0.7), (3, 4), scale=1.0), MORE_ACTIVATIONS),
    ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), _away_from((), (3, 4)),
     MORE_ACTIVATIONS),
    ("threshold", lambda x: F.threshold(x, 0.3, -2.0), lambda x: np.where(x > 0.3, x, -2.0),
     _away_from((0.3,), (3, 4), scale=1.0), MORE_ACTIVATIONS),
    ("mish", F.mish, lambda x: x * np.tanh(_softplus(x)), _away_from((), (3, 4)),
     MORE_ACTIVATIONS),
    ("celu", lambda x: F.celu(x, 1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x / 1.5)),
     _away_from((0,), (3, 4)), MORE_ACTIVATIONS),
    ("selu", F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
     _away_from((0,), (3, 4)), MORE_ACTIVATIONS),
    ("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3), lambda x: np.where(x > 0, x, 0.2 * x),
     _away_from((0,), (3, 4)), MORE_ACTIVATIONS),
    ("glu", lambda x: F.glu(x, 1), lambda x: x[:, :3] / (1 + np.exp(-x[:, 3:])),
     _away_from((), (2, 6, 2)), MORE_ACTIVATIONS),
    ("prelu", F.prelu,
     lambda x, w: np.where(x > 0, x, (w.reshape(-1, 1) if w.size > 1 else w) * x),
     _prelu_cases, MORE_ACTIVATIONS),
    ("softmin", lambda x: F.softmin(x, -1), _softmin_ref, _away_from((), (3, 5)),
     MORE_ACTIVATIONS),
])
