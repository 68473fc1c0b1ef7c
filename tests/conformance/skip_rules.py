"""What a row of the skip table is (skips.py holds the rows), and the sample predicates rows use.

A row names what it covers (an OpInfo entry and some of its checks, a module, an
optimizer), optionally narrowed to some dtypes, some of the op's variants, or the samples for
which a predicate holds, and says why. Three kinds:

- ``"structure"``: the values cannot be compared (random numbers, uninitialised memory, the
  order of ties), everything else can: the case runs and checks structure, shape, dtype and
  where torch raises; then it shows as a pytest skip with the reason.
- ``"skip"``: the case cannot be run at all (a random gradient, a torch-only value in every
  sample). It shows as a pytest skip with the reason.
- ``"disagrees"`` (the default): a known disagreement. The case still runs and must still
  disagree: it shows as an expected failure with the reason, and the moment tinyattn agrees
  it fails as XPASS(strict), which says to delete the row. So the table cannot rot.

A row without dtypes, variants or ``when`` covers the whole case; a narrower row is a case
of its own (``...-skip1``) and is taken out of the main case.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Tuple

import torch

__all__ = ["Skip", "op_skip", "module_skip", "optim_skip", "desc_is", "zero_dim", "has_kwarg",
           "kwarg_is", "float_dtypes_mix", "any_tensor", "tensor_arg_at", "has_ties",
           "input_not_tensor", "empty_tensor", "PENDING_PROMOTION", "RANDOM",
           "UNINITIALISED", "TIES", "predicate"]

PENDING_PROMOTION = "pending torch type promotion (promo30)"
RANDOM = ("random: the numbers come from the generator's stream, which is NumPy's in tinyattn "
          "and torch's own in torch (docs/pytorch.md)")
UNINITIALISED = ("uninitialised memory: torch returns whatever the memory held, tinyattn "
                 "zeros")
TIES = ("not unique: the order in which equal elements (ties) come out is unspecified "
        "(stable=True samples are compared)")

CHECKS = ("values", "gradients", "errors", "saves", "out", "module", "optimizer")
OP_CHECKS = CHECKS[:5]
KINDS = ("disagrees", "structure", "skip")


@dataclasses.dataclass(frozen=True)
class Skip:
    db: str                      # "op", "module" or "optim"
    name: str                    # entry key ("div.trunc_rounding"), "nn.Linear", "Adam"
    checks: Tuple[str, ...]      # some of CHECKS
    reason: str
    dtypes: Tuple[str, ...] = ()             # "float16", ...; empty: every dtype
    variants: Tuple[str, ...] = ()           # "function", "method", "inplace", "alias:clip"
    when: Optional[Callable[[Any], bool]] = None    # a predicate on torch's sample
    kind: str = "disagrees"                  # one of KINDS

    @property
    def whole(self) -> bool:
        """True when the row covers its case entirely (no narrowing but by dtype)."""
        return not self.variants and self.when is None

    def covers(self, variant: str, sample: Any) -> bool:
        if self.variants and variant not in self.variants:
            return False
        if self.when is None:
            return True
        try:
            return bool(self.when(sample))
        except Exception:  # noqa: BLE001 - a predicate that cannot read a sample: not it
            return False

    def label(self) -> str:
        parts = [f"{self.db}:{self.name}", "/".join(self.checks)]
        if self.dtypes:
            parts.append("/".join(self.dtypes))
        if self.variants:
            parts.append("/".join(self.variants))
        if self.when is not None:
            parts.append(getattr(self.when, "__doc__", None) or "some samples")
        return " ".join(parts)


def op_skip(name: str, checks: Any, reason: str, *, dtypes: Tuple[str, ...] = (),
            variants: Tuple[str, ...] = (), when: Optional[Callable[[Any], bool]] = None,
            kind: str = "disagrees") -> Skip:
    """A row for op_db entry ``name``; ``checks`` is one check or a tuple of them."""
    checks = (checks,) if isinstance(checks, str) else tuple(checks)
    for check in checks:
        if check not in OP_CHECKS:
            raise ValueError(f"op_skip({name!r}): a check is one of {OP_CHECKS}, got "
                             f"{check!r}")
    if kind not in KINDS:
        raise ValueError(f"op_skip({name!r}): kind is one of {KINDS}, got {kind!r}")
    return Skip("op", name, checks, reason, tuple(dtypes), tuple(variants), when, kind)


MODULE_CHECKS = ("values", "gradients", "errors")


def module_skip(name: str, checks: Any, reason: str, *, dtypes: Tuple[str, ...] = (),
                modes: Tuple[str, ...] = (), when: Optional[Callable[[Any], bool]] = None,
                kind: str = "disagrees") -> Skip:
    """A row for module_db entry ``name`` ("nn.Linear"); ``checks`` is one of MODULE_CHECKS
    or a tuple of them; ``modes`` narrows it to "train" or "eval" (kept in ``variants``);
    ``when`` is a predicate on torch's ModuleInput (see ``desc_is``)."""
    if not set(modes) <= {"train", "eval"}:
        raise ValueError(f"module_skip({name!r}): modes are 'train' and 'eval', got {modes}")
    checks = (checks,) if isinstance(checks, str) else tuple(checks)
    for check in checks:
        if check not in MODULE_CHECKS:
            raise ValueError(f"module_skip({name!r}): a check is one of {MODULE_CHECKS}, "
                             f"got {check!r}")
    if kind not in KINDS:
        raise ValueError(f"module_skip({name!r}): kind is one of {KINDS}, got {kind!r}")
    return Skip("module", name, checks, reason, tuple(dtypes), tuple(modes), when, kind)


def optim_skip(name: str, reason: str, *, when: Optional[Callable[[Any], bool]] = None,
               kind: str = "disagrees") -> Skip:
    """A row for optim_db entry ``name`` ("Adam"); ``when`` is a predicate on torch's
    OptimizerInput (see ``desc_is``)."""
    if kind not in KINDS:
        raise ValueError(f"optim_skip({name!r}): kind is one of {KINDS}, got {kind!r}")
    return Skip("optim", name, ("optimizer",), reason, (), (), when, kind)


def desc_is(*descs: str) -> Callable[[Any], bool]:
    """A predicate on a ModuleInput or OptimizerInput: its ``desc`` is one of ``descs``."""
    def predicate(module_input: Any) -> bool:
        return module_input.desc in descs
    predicate.__doc__ = "inputs " + " / ".join(repr(d) for d in descs)
    return predicate


# ------------------------------------------------------------------ sample predicates
def _tensors(value: Any) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _all_tensors(sample: Any) -> list:
    return _tensors([sample.input, list(sample.args), sample.kwargs])


def zero_dim(sample: Any) -> bool:
    """samples whose input is 0-d"""
    return isinstance(sample.input, torch.Tensor) and sample.input.dim() == 0


def any_tensor(test: Callable[[torch.Tensor], bool], doc: str) -> Callable[[Any], bool]:
    def predicate(sample: Any) -> bool:
        return any(test(t) for t in _all_tensors(sample))
    predicate.__doc__ = doc
    return predicate


def tensor_arg_at(index: int, test: Callable[[torch.Tensor], bool], doc: str
                  ) -> Callable[[Any], bool]:
    def predicate(sample: Any) -> bool:
        args = list(sample.args)
        return index < len(args) and isinstance(args[index], torch.Tensor) \
            and test(args[index])
    predicate.__doc__ = doc
    return predicate


def has_kwarg(name: str) -> Callable[[Any], bool]:
    def predicate(sample: Any) -> bool:
        return sample.kwargs.get(name) is not None
    predicate.__doc__ = f"samples with {name}="
    return predicate


def kwarg_is(name: str, value: Any) -> Callable[[Any], bool]:
    def predicate(sample: Any) -> bool:
        return name in sample.kwargs and sample.kwargs[name] == value
    predicate.__doc__ = f"samples with {name}={value!r}"
    return predicate


def float_dtypes_mix(sample: Any) -> bool:
    """samples mixing floating dtypes"""
    kinds = {t.dtype for t in _all_tensors(sample) if t.is_floating_point()}
    return len(kinds) > 1


def predicate(doc: str, test: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """``test`` (a function of torch's sample) with ``doc`` as its description."""
    def check(sample: Any) -> bool:
        return bool(test(sample))
    check.__doc__ = doc
    return check


def input_not_tensor(sample: Any) -> bool:
    """samples whose input is not a tensor"""
    return not isinstance(sample.input, torch.Tensor)


def empty_tensor(sample: Any) -> bool:
    """samples holding a tensor with no elements"""
    return any(t.numel() == 0 for t in _all_tensors(sample))


def has_ties(sample: Any) -> bool:
    """samples whose input holds equal elements, without stable=True"""
    x = sample.input
    if not isinstance(x, torch.Tensor) or sample.kwargs.get("stable"):
        return False
    return x.numel() > 1 and torch.unique(x).numel() < x.numel()
