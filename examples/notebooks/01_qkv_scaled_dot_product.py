# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 1. Queries, keys, values and the scaled dot product
#
# Attention answers one question for every position of a sequence: *which other positions
# should I read from, and how much?* Each position makes three vectors from its embedding:
#
# - a **query** q: what I am looking for,
# - a **key** k: what I offer to be found by,
# - a **value** v: what I hand over when I am found.
#
# The score of query i for key j is the dot product q_i . k_j; a softmax over j turns the
# scores of one query into weights that sum to 1; the output is the weighted sum of the
# values. In matrices, with Q (S, d_k), K (S, d_k), V (S, d_v):
#
#     out = softmax(Q K^T / sqrt(d_k)) V
#
# This notebook computes that by hand in NumPy, checks it against tinyattn's op, and shows
# numerically why the scores are divided by sqrt(d_k).
# Next: [02, softmax and its backward](02_softmax_backward.ipynb).
# Doc: [derivations.md, attention](../../docs/derivations.md#attention).

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

import tinyattn as ta
import tinyattn.functional as F

rng = np.random.default_rng(0)

# %% [markdown]
# ## Attention by hand
# Four tokens, d_k = 8. In a model, Q, K and V come from three linear maps of the
# embeddings; here they are random, which is enough to follow the shapes.

# %%
S, d_k = 4, 8
Q = rng.standard_normal((S, d_k))          # (S, d_k)
K = rng.standard_normal((S, d_k))          # (S, d_k)
V = rng.standard_normal((S, d_k))          # (S, d_v), d_v = d_k here

scores = Q @ K.T / np.sqrt(d_k)            # (S, d_k) @ (d_k, S) -> (S, S)
weights = np.exp(scores - scores.max(axis=1, keepdims=True))
weights /= weights.sum(axis=1, keepdims=True)   # softmax per row: each row sums to 1
out = weights @ V                          # (S, S) @ (S, d_v) -> (S, d_v)
print("scores", scores.shape, "weights", weights.shape, "out", out.shape)
print("row sums:", weights.sum(axis=1))

# %% [markdown]
# The same with tinyattn's op (float64, so the two agree to round-off). It wants a batch
# and head axis in front: (B, h, S, d_k).

# %%
q, k, v = (ta.tensor(a[None, None], dtype="float64") for a in (Q, K, V))
op_out, op_weights = F.scaled_dot_product_attention(q, k, v, need_weights=True)
print("largest difference from the hand computation:",
      np.abs(op_out.numpy()[0, 0] - out).max())

fig, ax = plt.subplots(figsize=(3.6, 3.2))
image = ax.imshow(weights, cmap="viridis", vmin=0, vmax=1)
ax.set_xlabel("key j")
ax.set_ylabel("query i")
ax.set_title("attention weights: row i sums to 1")
fig.colorbar(image)
plt.show()

# %% [markdown]
# ## Why divide by sqrt(d_k)?
# If the entries of q and k are independent with mean 0 and variance 1, then
# q . k = sum of d_k products, each with variance 1, so **Var(q . k) = d_k**. Wide heads
# give large scores, the softmax of large scores is nearly one-hot, and a nearly one-hot
# softmax has nearly zero gradient (notebook 2 shows why). Dividing by sqrt(d_k) brings the
# variance back to 1 for every width. Measured:

# %%
widths = [4, 16, 64, 256, 1024]
raw_var, scaled_var, raw_max, scaled_max = [], [], [], []
for width in widths:
    q = rng.standard_normal((2000, width))
    k = rng.standard_normal((2000, width))
    dots = (q * k).sum(axis=1)                       # 2000 dot products
    raw_var.append(dots.var())
    scaled_var.append((dots / np.sqrt(width)).var())
    rows = (q[:200] @ k[:16].T)                      # 200 queries over 16 keys
    for scale, store in ((1.0, raw_max), (np.sqrt(width), scaled_max)):
        w = F.softmax(ta.tensor(rows / scale), dim=-1).numpy()
        store.append(w.max(axis=1).mean())
for width, a, b in zip(widths, raw_var, scaled_var):
    print(f"d_k = {width:5d}: Var(q.k) = {a:8.1f}   Var(q.k / sqrt(d_k)) = {b:5.2f}")

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
left.loglog(widths, raw_var, "o-", label="q . k")
left.loglog(widths, scaled_var, "s-", label="q . k / sqrt(d_k)")
left.loglog(widths, widths, ":", color="0.5", label="d_k")
left.set_xlabel("d_k")
left.set_ylabel("variance of the score")
left.set_title("the score's variance grows like d_k")
left.legend()
right.semilogx(widths, raw_max, "o-", label="unscaled")
right.semilogx(widths, scaled_max, "s-", label="scaled")
right.axhline(1 / 16, color="0.5", linestyle=":", label="uniform over 16 keys")
right.set_xlabel("d_k")
right.set_ylabel("mean of the largest weight per row")
right.set_title("unscaled softmax saturates (one-hot)")
right.legend()
plt.show()

# %% [markdown]
# **What to look for:** on the left the unscaled variance follows the dotted d_k line and
# the scaled one stays at 1; on the right the unscaled softmax puts almost all of each row
# on one key once d_k is in the hundreds, while the scaled one keeps spreading its weight.
#
# ## Exercises (10 minutes)
# 1. Make the keys of positions 2 and 3 equal. What do their columns of `weights` look
#    like, and why?
# 2. Replace `np.sqrt(d_k)` by `d_k` in the variance cell. What variance do you get now,
#    and what happens to the softmax for large d_k?
# 3. With Q = K (self-similarity), which key does each query weigh most? Is that always so?
