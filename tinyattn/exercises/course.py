"""What an exercise is made of: parts, the inputs the checker feeds them, known mistakes.

Two kinds of part:

- ``Part`` (the ops track): a pair of functions ``NAME_forward(*inputs, **consts) -> (out,
  cache)`` and ``NAME_backward(grad, cache) -> gradient(s)``. Its ``Case``s hold float64
  inputs (which get gradients) and constants (ids, masks, axes: which do not), simple ones
  first, edge cases after. A ``Region`` marks input elements that matter for a diagnosis
  (masked positions, rows of repeated ids); a ``Mistake`` is a typical wrong formula computed
  from the reference cache, so the checker can say "you did exactly this".
- ``EnginePart`` (the engine track): one or more functions of a tiny autograd engine. A
  ``Scenario`` is plain data (a graph to build, a gradient to push); a probe (probes.py) runs
  it against the learner's module in the child process and against the reference solution in
  the checker's, and ``verify`` compares the two. An ``EngineMistake`` installs a typical
  wrong function into a copy of the reference, so an identical result names the mistake.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

__all__ = ["Region", "Case", "Mistake", "Part", "Scenario", "EngineMistake", "EnginePart",
           "Exercise", "Diagnosis", "DERIVATIONS"]

DERIVATIONS = "docs/derivations.md"


@dataclass
class Diagnosis:
    kind: str       # e.g. "shape_broadcast", "transpose", "factor", "diagonal", "masked"
    message: str


@dataclass
class Region:
    """Elements of one input where a specific mistake shows up.

    ``zero=True``: the right gradient is exactly zero there (masked positions), so any
    non-zero value is a leak. ``zero=False``: errors confined to the region point to it.
    """

    input: str
    where: np.ndarray
    kind: str
    message: str
    zero: bool = False


@dataclass
class Case:
    label: str
    inputs: Dict[str, np.ndarray]               # float64, in the forward's argument order
    consts: Dict[str, Any] = field(default_factory=dict)
    regions: List[Region] = field(default_factory=list)
    factors: List[Tuple[float, str]] = field(default_factory=list)  # (value, what it is)
    dims: Dict[str, int] = field(default_factory=dict)  # the letters of this case: S_q=2
    nonfinite_hint: str = ""    # why NaN or inf in a gradient here (scores of 1,000: exp)
    # Non-empty: no finite-difference check here, because the op is not differentiable at
    # these inputs (a max with tied maxima); every grad is compared with the reference rule
    # instead, and a wrong answer is explained with this text (which names the rule).
    exact_rule: str = ""

    def describe(self) -> str:
        shapes = ", ".join(f"{k} {v.shape}" for k, v in self.inputs.items())
        return f"{self.label} [{shapes}]"

    def legend(self) -> str:
        """'S_q = 2, S_k = 4, d_k = 3': the sizes of this case in the exercise's letters."""
        return ", ".join(f"{k} = {v}" for k, v in self.dims.items())


@dataclass
class Mistake:
    """A known wrong answer for one input, computed from (grad, reference cache)."""

    input: str
    kind: str
    message: str
    wrong: Callable[[np.ndarray, Any], np.ndarray]


@dataclass
class Part:
    name: str                                   # functions NAME_forward and NAME_backward
    inputs: Tuple[str, ...]
    cases: Callable[[np.random.Generator], List[Case]]
    mistakes: List[Mistake] = field(default_factory=list)
    diagonal_hint: Optional[str] = None         # set for ops whose rows couple (softmax-like)
    sign_hint: str = "Check the sign of each term of your formula."
    transpose_hint: Optional[str] = None        # which product makes a transposed gradient
    # (input name, shape returned, right shape, case) -> a Diagnosis for a wrong shape that
    # this op explains better than the generic rules (convolution's padding left on), or None
    shape_hint: Optional[Callable[[str, Tuple[int, ...], Tuple[int, ...], "Case"],
                                  Optional[Diagnosis]]] = None
    kind = "op"

    @property
    def forward_name(self) -> str:
        return f"{self.name}_forward"

    @property
    def backward_name(self) -> str:
        return f"{self.name}_backward"

    @property
    def functions(self) -> Tuple[str, ...]:
        return (self.forward_name, self.backward_name)


@dataclass
class Scenario:
    label: str
    data: Dict[str, Any]                        # plain data, pickled to the child process


@dataclass
class EngineMistake:
    kind: str
    message: str
    install: Callable[[Any], None]              # puts the wrong function into a module


@dataclass
class EnginePart:
    name: str
    functions: Tuple[str, ...]                  # what the learner writes
    probe: str                                  # a function of probes.py
    scenarios: Callable[[np.random.Generator], List[Scenario]]
    # (scenario, learner's values, expected values) -> None when right, else a Diagnosis
    verify: Callable[[Scenario, Dict[str, Any], Dict[str, Any]], Optional[Diagnosis]]
    mistakes: List[EngineMistake] = field(default_factory=list)
    note: Optional[Callable[[Dict[str, Any]], str]] = None  # a line for a passed part
    # (learner's values, a mistake's values) -> identical? None: engine_verify.same_values
    agree: Optional[Callable[[Dict[str, Any], Dict[str, Any]], bool]] = None
    kind = "engine"


@dataclass
class Exercise:
    number: int
    name: str
    title: str
    read: str                                   # "docs/derivations.md#softmax"
    parts: List[Any]                            # Part or EnginePart
    track: str = "ops"                          # "ops", "engine" or "systems"

    @property
    def filename(self) -> str:
        return f"{self.number:02d}_{self.name}.py"

    @property
    def label(self) -> str:
        return f"{self.number:02d} {self.name}"
