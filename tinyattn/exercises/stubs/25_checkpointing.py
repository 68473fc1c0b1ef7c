"""Exercise 25, gradient checkpointing: keep a few activations, recompute the rest.

Task
    Write checkpointed_backward(x, weights, seeds, grad, segment): run the layers keeping
    only every segment's input, then walk back segment by segment, recomputing each
    segment's inner activations with layer_forward (given) just before its backward.
    Return (dx, [dw of each layer]).

Hints (read docs/attention_systems.md#gradient-checkpointing)
    1. Recompute from the segment's saved input, not from x: one extra forward in all.
    2. The dropout mask comes from the seed: recompute layer i with seeds[i].
    3. Keep all activations and you have no checkpointing: the checker measures the
       memory your function holds at once (NumPy's allocations), not only its calls.

Check
    python -m tinyattn.exercises check checkpointing --path <your folder>
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
    raise NotImplementedError("checkpointed_backward: write it")
