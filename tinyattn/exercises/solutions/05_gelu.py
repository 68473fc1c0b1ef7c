"""Exercise 05, GELU: reference solution for gelu_backward.

Derivation (docs/derivations.md#gelu)
    out = x Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2 the standard normal CDF.
    Product rule: d out / dx = Phi(x) + x Phi'(x), and Phi' = phi, the normal density
    phi(x) = exp(-x^2 / 2) / sqrt(2 pi). (Through erf: d erf(u)/du = 2 exp(-u^2) / sqrt(pi),
    and u = x / sqrt 2 adds the factor 1 / sqrt 2: (1/2)(2 / sqrt(pi))(1 / sqrt 2) exp(-x^2/2)
    = phi(x).)
    Elementwise op, diagonal Jacobian: dx = grad * (Phi(x) + x phi(x)).
"""
import math

import numpy as np
from scipy.special import erf


def gelu_forward(x):
    """out = x * Phi(x), Phi the standard normal CDF. Given; do not change."""
    cdf = 0.5 * (1.0 + erf(x / math.sqrt(2.0)))
    return x * cdf, (x, cdf)


def gelu_backward(grad, cache):
    """Return dx, of x's shape."""
    x, cdf = cache
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return grad * (cdf + x * pdf)
