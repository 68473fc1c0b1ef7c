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
# # 3. Masks: padding, causal, and a row with nothing to see
#
# A mask says which keys a query may attend to. Three kinds matter:
#
# - **padding**: a batch of sequences of different lengths is padded to one length; no
#   query may attend to a padding key;
# - **causal**: a language model predicting token i+1 from position i must not see
#   positions after i;
# - **fully masked rows**: a query with no key left (a padding query under a padding
#   mask, or a window that excludes everything) has nothing to average.
#
# In `F.scaled_dot_product_attention` a boolean `attn_mask` is **True where a query may
# attend** (PyTorch's convention); masked scores become -inf before the softmax, so their
# weight is exactly 0. Doc: [nn.md, masks](../../docs/nn.md#masks) and
# [derivations.md, masking](../../docs/derivations.md#masking).
# Previous: [02](02_softmax_backward.ipynb); next: [04, multi-head attention](04_multi_head.ipynb).

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

ta.manual_seed(0)
S, d_k = 5, 4
q, k, v = (ta.randn(1, 1, S, d_k, dtype="float64", requires_grad=True) for _ in range(3))


def show(ax, weights, allowed, title):
    """Masked cells grey (never a weight), real weights in viridis: 0 is dark purple."""
    drawn = np.where(allowed, weights, np.nan)
    cmap = plt.get_cmap("viridis").with_extremes(bad="#c8c8c8")
    image = ax.imshow(drawn, cmap=cmap, vmin=0, vmax=1)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    return image


# %% [markdown]
# ## Padding and causal masks
# The sequence has 3 real tokens and 2 of padding. `nn.key_padding_mask` gives True for
# padding (PyTorch's `key_padding_mask` convention); `nn.causal_mask` gives True where key
# j <= query i (may attend). Combine them into one "may attend" mask.

# %%
padding = nn.key_padding_mask([3], seq_len=S).numpy()          # (B, S): True = padding
may_attend_padding = np.broadcast_to(~padding[:, None, :], (1, S, S))[0]   # (S, S)
causal = nn.causal_mask(S).numpy()                            # (S, S): True = may attend
both = may_attend_padding & causal
print("padding (True = pad):", padding[0])
print("causal (True = may attend):\n", causal.astype(int))

fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
for ax, allowed, title in zip(axes, (may_attend_padding, causal, both),
                              ("padding: keys 3, 4 hidden", "causal: j <= i",
                               "both")):
    _, w = F.scaled_dot_product_attention(q, k, v, attn_mask=ta.tensor(allowed),
                                          need_weights=True)
    image = show(ax, w.numpy()[0, 0], allowed, title)
fig.colorbar(image, ax=axes, label="attention weight")
plt.show()

# %% [markdown]
# **What to look for:** grey cells are masked, which is a different thing from a weight of
# 0 (dark purple): a masked key is never looked at, a weight of 0 was looked at and lost.
# Every row still sums to 1 over its allowed keys.
#
# ## A row with nothing to see
# Now hide every key from query 0. A textbook masked softmax computes exp(-inf) / sum of
# exp(-inf) = 0 / 0 = NaN, and the NaN spreads to every gradient that touches it:

# %%
scores = np.zeros((S, S))
scores[0, :] = -np.inf                                  # query 0: every key masked
with np.errstate(invalid="ignore"):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    naive = e / e.sum(axis=1, keepdims=True)
print("textbook softmax, row 0:", naive[0])

allowed = causal.copy()
allowed[0, :] = False
out, w = F.scaled_dot_product_attention(q, k, v, attn_mask=ta.tensor(allowed),
                                        need_weights=True)
out.sum().backward()
print("tinyattn, weights of row 0:", w.numpy()[0, 0, 0])
print("tinyattn, output of row 0: ", out.numpy()[0, 0, 0])
print("gradients finite:", all(np.isfinite(t.grad.numpy()).all() for t in (q, k, v)))

# %% [markdown]
# tinyattn gives a fully masked row an output of zeros and zero gradients, never NaN
# (PyTorch's `nn.MultiheadAttention` returns NaN there on some paths; see
# [docs/nn.md](../../docs/nn.md#masks)). The gradient through the masked scores is exactly
# 0, which a gradient check confirms (float64, finite differences):

# %%
mask = ta.tensor(allowed)
print(ta.gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, attn_mask=mask),
                   [q, k, v]))

# %% [markdown]
# ## Exercises (10 minutes)
# 1. Use a float mask instead: 0 where allowed, -1e9 where not. Do the weights match the
#    boolean mask's? What happens in float16, where -1e9 is -inf?
# 2. Build a sliding-window mask (`nn.sliding_window_mask`) of width 2 and draw it as
#    above. Which rows have the fewest keys?
