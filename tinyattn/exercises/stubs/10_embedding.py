"""Exercise 10, embedding lookup with repeated ids.

Task
    Fill in embedding_backward: given grad (..., D) and the cache (ids, (V, D)), return
    dweight of shape (V, D).

Shapes
    weight (V, D), ids integer of any shape (...) -> out (..., D), out[p] = weight[ids[p]].
    The checker repeats ids, uses one id everywhere, and leaves rows unused.

Hints (read docs/derivations.md#embedding)
    1. Which rows of weight does out[p] depend on? So which gradient rows land where?
    2. An id used at several positions collects the gradient of every one of them.
    3. Try it: d = np.zeros(3); d[[0, 0]] += 1.0; print(d). NumPy has a function that
       adds up duplicates correctly: np.add.at.

Check
    python -m tinyattn.exercises check embedding --path <your folder>
"""

import numpy as np  # noqa: F401 - for your backward


def embedding_forward(weight, ids):
    """out = weight[ids]: weight (V, D), integer ids of any shape (...) -> (..., D).
    Given; do not change."""
    return weight[ids], (ids, weight.shape)


def embedding_backward(grad, cache):
    """Return dweight, of weight's shape (V, D)."""
    ids, (vocab, dim) = cache
    # Your code here (delete the raise).
    raise NotImplementedError("embedding_backward")
