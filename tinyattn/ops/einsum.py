"""``einsum``: products and sums written in index notation (docs/derivations.md#einsum).

    einsum("bij,bjk->bik", a, b)    # batched matmul
    einsum("ii", x)                 # trace
    einsum("...d,...d->...", q, k)  # a dot product over the last dim, any batch dims

Supported as in PyTorch: letters a-z and A-Z, one ``...`` per operand (broadcast like NumPy),
the implicit output (no ``->``: the letters used once, in alphabetical order, after the
ellipsis dims), repeated letters within an operand (diagonals, traces) and size-1 dims that
broadcast against a larger size of the same letter. The backward of an einsum is another
einsum, derived in ``Einsum``'s docstring.
"""
from __future__ import annotations

import string
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from .. import backend
from ..autograd import Function, name_node
from ..tensor import Tensor
from ..precision import is_complex_dtype, is_floating

__all__ = ["einsum"]

Subscripts = Tuple[str, ...]         # one letter per dim of an operand


class Einsum(Function):
    """out[o] = sum over the letters not in o of  prod_k  A_k[s_k].

    The derivative of one product term with respect to A_k[s_k] is the product of the other
    factors, and a letter summed in the forward sums the gradient too, so

        dA_k[s_k] = sum over the letters not in s_k of  g[o] * prod_{j != k} A_j[s_j],

    which is itself an einsum: of g (subscripts o) and the other operands, into s_k. Two
    cases need more than that einsum:
    - a letter only A_k has (in neither o nor any other operand) was summed over A_k alone:
      the gradient does not depend on it, so it is broadcast along that dim;
    - a letter repeated within s_k (``ii`` reads the diagonal): only the diagonal elements
      reach the output, so dA_k is zero except on the diagonal, which gets the einsum into
      the distinct letters.
    """

    promotes_inputs = False    # mixed floating dtypes: refused, as torch refuses

    def forward(self, *arrays, inputs: Tuple[Subscripts, ...], output: Subscripts):
        out = _contract(arrays, inputs, output)
        if any(backend.may_share_memory(out, a) for a in arrays):
            out = out.copy()                    # "ij->ji" is a transposed view in NumPy
        if self.recording:
            kept = _kept_for_backward(arrays, inputs, output)
            self.save_for_backward(inputs, output, [(a.shape, a.dtype) for a in arrays],
                                   [s for s, _ in kept], *[a for _, a in kept])
        return out

    def backward(self, grad):
        inputs, output, layouts, kept_subs, *kept_arrays = self.saved
        kept = list(zip(kept_subs, kept_arrays))
        grads = []
        for k, ((shape, dtype), subs) in enumerate(zip(layouts, inputs)):
            if not self.needs_input_grad[k]:
                grads.append(None)
                continue
            others = [(output, grad)] + [kept[j] for j in range(len(kept)) if j != k]
            present = {letter for s, _ in others for letter in s}
            distinct = tuple(dict.fromkeys(subs))               # s_k without repeats
            target = tuple(c for c in distinct if c in present)
            part = _contract([a for _, a in others], [s for s, _ in others], target)
            grads.append(_place(part, target, distinct, subs, shape, dtype))
        return tuple(grads)


def _kept_for_backward(arrays: Sequence[Any], inputs: Sequence[Subscripts],
                       output: Subscripts) -> List[Any]:
    """What the backward keeps of each operand: the gradient of operand k needs the others
    only, so one operand keeps nothing. Of several, an operand with a letter of size > 1
    used nowhere else (neither in the output nor in another operand) keeps its sum over those
    letters, a new array, as torch's einsum sums such dims before it multiplies; any other
    operand is kept itself, so an in-place change to it after the einsum makes the backward
    raise, as torch's (whose products keep views of it) does (docs/derivations.md#einsum)."""
    if len(arrays) == 1:
        return []
    kept = []
    for k, (a, subs) in enumerate(zip(arrays, inputs)):
        elsewhere = set(output).union(*(s for j, s in enumerate(inputs) if j != k))
        solo = {c for c, n in zip(subs, a.shape) if c not in elsewhere and n > 1}
        if not solo:
            kept.append((subs, a))
            continue
        target = tuple(c for c in dict.fromkeys(subs) if c not in solo)
        kept.append((target, _contract([a], [subs], target).copy()))
    return kept


def _contract(arrays: Sequence[Any], inputs: Sequence[Subscripts], output: Subscripts) -> Any:
    equation = ",".join("".join(s) for s in inputs) + "->" + "".join(output)
    xp = backend.get_array_module(arrays[0])
    return xp.einsum(equation, *arrays, optimize=len(arrays) > 1)


def _place(part: Any, target: Subscripts, distinct: Subscripts, subs: Subscripts,
           shape: Tuple[int, ...], dtype: Any) -> Any:
    """Broadcast ``part`` (letters ``target``) along the letters only operand x (of
    ``shape``) has, then put it on the diagonals of x's repeated letters."""
    xp = backend.get_array_module(part)
    size = {c: n for c, n in zip(subs, shape)}
    kept_shape = tuple(size[c] if c in target else 1 for c in distinct)
    full = xp.broadcast_to(part.reshape(kept_shape), tuple(size[c] for c in distinct))
    if len(distinct) == len(subs):
        return full
    dx = xp.zeros(shape, dtype=dtype)
    index = []
    for c in subs:                              # position of every letter among the distinct
        where = [1] * len(distinct)
        where[distinct.index(c)] = size[c]
        index.append(xp.arange(size[c]).reshape(where))
    dx[tuple(index)] = full
    return dx


# ------------------------------------------------------------------ parsing
_LETTERS = string.ascii_letters


def _parse_term(term: str, ndim: int, k: int) -> Tuple[str, int]:
    """The letters of one operand's term (ellipsis marked '.'), and how many dims '...' has."""
    if term.count("...") > 1 or term.replace("...", "").count("."):
        raise ValueError(f"einsum: operand {k}'s subscripts {term!r} have more than one "
                         f"ellipsis, or a stray '.'")
    letters = term.replace("...", ".")
    bad = [c for c in letters if c != "." and c not in _LETTERS]
    if bad:
        raise ValueError(f"einsum: subscripts must be letters a-z, A-Z (and '...'), got "
                         f"{bad[0]!r} in {term!r}")
    named = len(letters) - ("." in letters)
    if "." not in letters and named != ndim or named > ndim:
        raise ValueError(f"einsum: operand {k} has {ndim} dims but its subscripts {term!r} "
                         f"name {named}{' (plus ...)' if '.' in letters else ''}")
    return letters, ndim - named if "." in letters else 0


def _parse(equation: str, shapes: Sequence[Tuple[int, ...]]
           ) -> Tuple[List[Subscripts], Subscripts]:
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} has {len(terms)} operand(s) but "
                         f"{len(shapes)} tensor(s) were given")
    parsed = [_parse_term(t, len(s), k) for k, (t, s) in enumerate(zip(terms, shapes))]
    width = max((w for _, w in parsed), default=0)
    used = set(eq)
    spare = iter(c for c in _LETTERS if c not in used)
    ellipsis = tuple(next(spare) for _ in range(width))      # letters for the '...' dims
    inputs = [_expand(letters, ellipsis[width - w:]) for letters, w in parsed]
    if arrow:
        if rhs.count("...") > 1 or rhs.replace("...", "").count("."):
            raise ValueError(f"einsum: bad output subscripts {rhs!r}")
        output = _expand(rhs.replace("...", "."), ellipsis)
    else:
        counts: Dict[str, int] = {}
        for term in inputs:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        output = ellipsis + tuple(sorted(c for c, n in counts.items()
                                         if n == 1 and c not in ellipsis))
    _check_output(output, inputs, equation)
    return _broadcast_ones(inputs, shapes, spare), output


def _expand(letters: str, ellipsis: Subscripts) -> Subscripts:
    out: List[str] = []
    for c in letters:
        out.extend(ellipsis if c == "." else (c,))
    return tuple(out)


def _check_output(output: Subscripts, inputs: Sequence[Subscripts], equation: str) -> None:
    bad = [c for c in output if c not in _LETTERS]
    seen = {c for s in inputs for c in s}
    if bad:
        raise ValueError(f"einsum: output subscripts must be letters, got {bad[0]!r} in "
                         f"{equation!r}")
    for c in output:
        if output.count(c) > 1:
            raise ValueError(f"einsum: output subscript {c!r} appears more than once in "
                             f"{equation!r}")
        if c not in seen:
            raise ValueError(f"einsum: output subscript {c!r} does not appear in any operand "
                             f"of {equation!r}")


def _broadcast_ones(inputs: List[Subscripts], shapes: Sequence[Tuple[int, ...]], spare: Any
                    ) -> List[Subscripts]:
    """Check sizes; a size-1 dim whose letter is larger elsewhere gets a letter of its own,
    used nowhere else: summed over its one element, it broadcasts exactly."""
    size: Dict[str, int] = {}
    for k, (subs, shape) in enumerate(zip(inputs, shapes)):
        for c, n in zip(subs, shape):
            if any(c == d and n != m for d, m in zip(subs, shape)):
                raise ValueError(f"einsum: subscript {c!r} repeats in operand {k} (shape "
                                 f"{shape}) with different sizes; a diagonal needs equal ones")
            if c in size and n != size[c] and 1 not in (n, size[c]):
                raise ValueError(f"einsum: subscript {c!r} has size {n} in operand {k} but "
                                 f"{size[c]} elsewhere; sizes of one subscript must match "
                                 f"(or be 1)")
            size[c] = max(size.get(c, n), n)
    out = []
    for k, (subs, shape) in enumerate(zip(inputs, shapes)):
        fresh: Dict[str, str] = {}
        renamed = []
        for c, n in zip(subs, shape):
            if n == 1 and size[c] > 1:
                if c not in fresh:
                    fresh[c] = next(spare, None)
                    if fresh[c] is None:
                        raise ValueError("einsum: too many distinct subscripts (52 letters)")
                renamed.append(fresh[c])
            else:
                renamed.append(c)
        out.append(tuple(renamed))
    return out


def einsum(equation: str, *operands: Any) -> Tensor:
    """``torch.einsum(equation, *operands)`` (or one list of operands)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the first argument is the equation string, got "
                        f"{type(equation).__name__}")
    if not operands or not all(isinstance(t, Tensor) for t in operands):
        raise TypeError("einsum: give one or more tensors after the equation")
    inputs, output = _parse(equation, [t.shape for t in operands])
    floats = [t.dtype for t in operands if is_floating(t.dtype)]
    if any(is_complex_dtype(t.dtype) for t in operands):
        pass        # no cast (it would drop the imaginary part): Einsum refuses complex loudly
    elif floats:                                  # integer operands join the float dtype
        operands = tuple(t if is_floating(t.dtype) else Tensor._wrap(t._data.astype(floats[0]))
                         for t in operands)
    elif _sums_alone(inputs, output, [t.shape for t in operands]):
        operands = tuple(Tensor._wrap(t._data.astype(np.int64)) for t in operands)
    elif len(operands) > 1 and all(t.dtype == np.bool_ for t in operands) and any(
            c not in output and sum(c in subs for subs in inputs) > 1
            for c in set().union(*inputs)):
        raise NotImplementedError(   # torch contracts with bmm, which has no bool kernel; an
            "\"bmm\" not implemented for 'Bool' (as torch: einsum of bool tensors that sums "
            "a product); convert them with .int() for counts or .float()")   # or, not a count
    out = Einsum.apply(*operands, inputs=tuple(inputs), output=output)
    return name_node(out, _torch_node_name(inputs, output))


def _torch_node_name(inputs: Sequence[Subscripts], output: Subscripts) -> str:
    """The last step of torch's einsum (measured on torch 2.13): one operand is permuted, and
    summed where a letter leaves; of several, the last pair is multiplied (an outer or
    elementwise product) or, when it shares a letter that is summed, contracted by a bmm
    whose result is viewed into shape."""
    if len(inputs) == 1:
        return "SumBackward1" if set(inputs[0]) - set(output) else "PermuteBackward0"
    shared = set(inputs[-1]) & set().union(*inputs[:-1])
    return "ViewBackward0" if shared - set(output) else "MulBackward0"


def _sums_alone(inputs: Sequence[Subscripts], output: Subscripts,
                shapes: Sequence[Tuple[int, ...]]) -> bool:
    """Does torch's einsum sum a dim of one operand on its own (with ``sum``, which turns
    integers and bools into int64) before it multiplies? It does for a letter of one operand
    that is not in the output: always for a single operand ("ij->i", the trace "ii"), and of
    several operands for a letter no other operand has, unless its size is 1 (then it is
    squeezed). A size-1 dim broadcast against a larger one was renamed to a letter of its own
    (``_broadcast_ones``), so the larger side is the one summed alone, as torch sums it.
    Integer einsums without such a sum keep their dtype ("ij,jk->ik" of int32 is int32)."""
    for k, (subs, shape) in enumerate(zip(inputs, shapes)):
        elsewhere = set(output).union(*(s for j, s in enumerate(inputs) if j != k))
        for c, n in zip(subs, shape):
            if c not in elsewhere and (len(inputs) == 1 or n != 1):
                return True
    return False
