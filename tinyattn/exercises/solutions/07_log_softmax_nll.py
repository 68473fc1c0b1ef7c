"""Exercise 07, log_softmax and negative log-likelihood: reference solution.

Derivation (docs/derivations.md#cross-entropy)
    log_softmax: out_i = x_i - log Z, Z = sum_j exp(x_j). d log Z / d x_j = exp(x_j) / Z = p_j,
    so d out_i / d x_j = delta_ij - p_j and dx_j = grad_j - p_j sum_i grad_i, with
    p = exp(out) (reuse the output; no second softmax).
    nll: loss = -(1/N) sum_n logp[n, t_n]. Only the target entry of each row appears, with
    coefficient -1/N: dlogp = 0 everywhere except dlogp[n, t_n] = -grad / N.
    cross_entropy = nll(log_softmax(logits)): chain the two. Row n gets
    d_j = (-1/N)(delta_{j t_n} - p_j), so dlogits = grad (p - onehot(t)) / N. Fused, it is
    cheaper and never forms log(p) of a p that underflowed to 0.
"""
import numpy as np


def log_softmax_forward(x):
    """out = x - logsumexp(x) over the last axis, computed stably. Given; do not change."""
    shifted = x - x.max(axis=-1, keepdims=True)
    out = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return out, (out,)


def log_softmax_backward(grad, cache):
    """Return dx, of x's shape."""
    (out,) = cache
    return grad - np.exp(out) * grad.sum(axis=-1, keepdims=True)


def nll_forward(logp, target):
    """loss = -mean_n logp[n, target[n]]: logp (N, C), target (N,) ints -> a 0-d array.
    Given; do not change."""
    n = logp.shape[0]
    loss = -logp[np.arange(n), target].mean()
    return np.asarray(loss), (logp.shape, target)


def nll_backward(grad, cache):
    """Return dlogp, of logp's shape (N, C). grad is a 0-d array: the loss is a scalar."""
    (n, classes), target = cache
    dlogp = np.zeros((n, classes))
    dlogp[np.arange(n), target] = -grad / n
    return dlogp


def cross_entropy_forward(logits, target):
    """loss = nll(log_softmax(logits), target): logits (N, C), target (N,) -> 0-d.
    Given; do not change."""
    logp, _ = log_softmax_forward(logits)
    loss, _ = nll_forward(logp, target)
    return loss, (logp, target)


def cross_entropy_backward(grad, cache):
    """Return dlogits, of logits' shape (N, C)."""
    logp, target = cache
    n = logp.shape[0]
    dlogits = np.exp(logp)                      # p, (N, C)
    dlogits[np.arange(n), target] -= 1.0        # p - onehot(target)
    return dlogits * (grad / n)
