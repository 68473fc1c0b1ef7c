"""Exercise 07, log_softmax, negative log-likelihood and cross-entropy.

Task
    Fill in log_softmax_backward, nll_backward and cross_entropy_backward.

Shapes
    log_softmax: x (..., C) -> out (..., C), over the last axis.
    nll: logp (N, C) log-probabilities, target (N,) ints -> loss, a 0-d array (mean over N).
    cross_entropy: logits (N, C), target (N,) -> loss: nll(log_softmax(logits)).
    grad of a 0-d loss is a 0-d array; return gradients of the input's full shape.

Hints (read docs/derivations.md#cross-entropy)
    1. log_softmax: out_i = x_i - log sum_j exp(x_j). What is d(log sum exp)/dx_j? The
       cache holds out, and exp(out) is the softmax.
    2. nll: only one entry per row appears in the loss. Which, with what coefficient?
       Everything else gets zero gradient. Mind the mean.
    3. cross_entropy: chain the two results and simplify; the answer is famous
       (probabilities minus the one-hot target).

Check
    python -m tinyattn.exercises check log_softmax_nll --path <your folder>
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
    # Your code here (delete the raise).
    raise NotImplementedError("log_softmax_backward")


def nll_forward(logp, target):
    """loss = -mean_n logp[n, target[n]]: logp (N, C), target (N,) ints -> a 0-d array.
    Given; do not change."""
    n = logp.shape[0]
    loss = -logp[np.arange(n), target].mean()
    return np.asarray(loss), (logp.shape, target)


def nll_backward(grad, cache):
    """Return dlogp, of logp's shape (N, C). grad is a 0-d array: the loss is a scalar."""
    (n, classes), target = cache
    # Your code here (delete the raise).
    raise NotImplementedError("nll_backward")


def cross_entropy_forward(logits, target):
    """loss = nll(log_softmax(logits), target): logits (N, C), target (N,) -> 0-d.
    Given; do not change."""
    logp, _ = log_softmax_forward(logits)
    loss, _ = nll_forward(logp, target)
    return loss, (logp, target)


def cross_entropy_backward(grad, cache):
    """Return dlogits, of logits' shape (N, C)."""
    logp, target = cache
    # Your code here (delete the raise).
    raise NotImplementedError("cross_entropy_backward")
