"""``tinyattn.special``: torch.special's names for the special functions
(ops/special_functions.py, docs/derivations.md#special-functions) and its aliases of ops
tinyattn has under other names (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``psi``
is ``digamma``).

    import tinyattn.special
    tinyattn.special.erfinv(x); tinyattn.special.log_ndtr(x)
"""
from __future__ import annotations

from .ops import xlog1py, xlogy
from .ops import (digamma, entr, erf, erfc, erfcx, erfinv, exp2, expm1, i0, i0e, i1, i1e,
                  lgamma, log1p, log_ndtr, log_softmax, logit, logsumexp, ndtr, ndtri, round,
                  sigmoid, sinc, softmax)

from .ops import mvlgamma, polygamma

expit = sigmoid
gammaln = lgamma
psi = digamma
multigammaln = mvlgamma

__all__ = ["erf", "erfc", "erfinv", "erfcx", "expit", "logit", "gammaln", "digamma", "psi",
           "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "entr", "sinc", "exp2",
           "expm1", "log1p", "logsumexp", "softmax", "log_softmax", "round", "xlogy",
           "xlog1py", "polygamma", "multigammaln"]
