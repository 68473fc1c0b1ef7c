"""``tinyattn.special``: torch.special's names for the special functions
(ops/special_functions.py, docs/derivations.md#special-functions) and its aliases of ops
tinyattn has under other names (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``psi``
is ``digamma``).

    import tinyattn.special
    tinyattn.special.erfinv(x); tinyattn.special.log_ndtr(x)
"""
from __future__ import annotations

from typing import Any

from .ops import round as _round
from .ops import xlog1py, xlogy
from .ops import (digamma, entr, erf, erfc, erfcx, erfinv, exp2, expm1, i0, i0e, i1, i1e,
                  lgamma, log1p, log_ndtr, log_softmax, logit, logsumexp, ndtr, ndtri,
                  sigmoid, sinc, softmax)

from .ops import mvlgamma, polygamma

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma


def round(input: Any, *, decimals: int = 0) -> Any:  # noqa: A001
    """``torch.special.round``: ``torch.round`` for floating tensors only. torch's alias has no
    integer or bool kernel and raises where ``torch.round`` returns an integer tensor
    unchanged, so this one raises too (convert with ``.float()`` first)."""
    dtype = getattr(input, "dtype", None)
    if dtype is not None and dtype.kind in "biu":
        raise NotImplementedError(f"special.round: not implemented for {dtype} tensors (as "
                                  f"torch's \"round_vml_cpu\"); torch.round accepts them, or "
                                  f"convert with .float() first")
    return _round(input, decimals=decimals)

__all__ = ["erf", "erfc", "erfinv", "erfcx", "expit", "logit", "gammaln", "digamma", "psi",
           "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "entr", "sinc", "exp2",
           "expm1", "log1p", "logsumexp", "softmax", "log_softmax", "round", "xlogy",
           "xlog1py", "polygamma", "multigammaln"]
