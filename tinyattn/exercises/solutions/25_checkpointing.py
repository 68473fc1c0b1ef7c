"""Exercise 25, gradient checkpointing: keep a few activations, recompute the rest: reference
solution.

Derivation (docs/attention_systems.md#gradient-checkpointing)
    A stack of L layers keeps L activations for backward. Checkpointing keeps only the input
    of every segment (every ``segment`` layers) and, in backward, recomputes a segment's
    inner activations from its saved input just before walking back through it: memory
    L / segment + segment activations instead of L, for one extra forward. Two rules:
        recompute from the segment's saved input, not from x (else the cost is quadratic);
        replay the randomness: a dropout mask drawn again must be the SAME mask
        (torch.utils.checkpoint saves and restores the RNG state; here: the same seed).
"""
import numpy as np


def layer_forward(x, w, seed):
    """tanh(x @ w) with dropout (p = 0.25, mask from ``seed``). Given; do not change."""
    mask = np.random.default_rng(seed).random(x.shape[:-1] + (w.shape[1],)) >= 0.25
    return np.tanh(x @ w) * mask / 0.75         # (N, d) @ (d, d)


def layer_backward(x, w, seed, grad):
    """(dx, dw) of layer_forward at x for the upstream grad. Given; do not change."""
    mask = np.random.default_rng(seed).random(x.shape[:-1] + (w.shape[1],)) >= 0.25
    h = np.tanh(x @ w)
    dz = grad * mask / 0.75 * (1.0 - h * h)
    return dz @ w.T, x.T @ dz


def checkpointed_backward(x, weights, seeds, grad, segment):
    """Forward through every layer keeping only each segment's input, then backward,
    recomputing each segment. Returns (dx, [dw for each layer])."""
    saved = {}
    h = x
    for i, (w, seed) in enumerate(zip(weights, seeds)):
        if i % segment == 0:
            saved[i] = h
        h = layer_forward(h, w, seed)
    dws = [None] * len(weights)
    for start in reversed(sorted(saved)):
        stop = min(start + segment, len(weights))
        inputs = [saved[start]]
        for i in range(start, stop - 1):        # the segment's inner activations, again
            inputs.append(layer_forward(inputs[-1], weights[i], seeds[i]))
        for i in reversed(range(start, stop)):
            grad, dws[i] = layer_backward(inputs[i - start], weights[i], seeds[i], grad)
    return grad, dws
