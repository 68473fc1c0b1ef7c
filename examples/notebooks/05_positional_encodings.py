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
# # 5. Positional encodings, plotted
#
# Attention by itself does not know the order of its inputs: permute the keys and values
# together and every query gets the same output. A model that must reverse a sequence has
# to be told where each token sits. Four ways, all in `tinyattn.nn`:
#
# - **sinusoidal**: add a fixed vector PE[p] to the embedding at position p, sin and cos
#   waves of geometrically spaced frequencies;
# - **learned**: add a trained vector per position (GPT-2);
# - **RoPE**: rotate each pair of q and k features by an angle p * theta_i, so that
#   q_m . k_n depends on m - n only;
# - **ALiBi**: add -slope_h * distance to head h's scores.
#
# Doc: [nn.md, positional encodings](../../docs/nn.md#positional-encodings) and
# [see_it.md, positional encodings](../../docs/see_it.md#positional-encodings).
# Previous: [04](04_multi_head.ipynb); next: [06, the engine](06_engine.ipynb).

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn
from tinyattn.train.plot_positional import positional_figure

ta.manual_seed(0)

# %% [markdown]
# ## Without positions, order is invisible
# Permute the keys and values of one attention: the output of each query is unchanged.

# %%
q, k, v = (ta.randn(1, 1, 6, 8, dtype="float64") for _ in range(3))
perm = [3, 0, 5, 1, 4, 2]
out = F.scaled_dot_product_attention(q, k, v)
shuffled = F.scaled_dot_product_attention(q, k[:, :, perm], v[:, :, perm])
print("largest change after shuffling the keys:", np.abs(out.numpy() - shuffled.numpy()).max())

# %% [markdown]
# ## Sinusoidal: waves of many speeds
# `nn.sinusoidal_table(S, D)` is the table added to the embeddings. Two positions' vectors
# have a dot product that depends (mostly) on their distance.

# %%
table = nn.sinusoidal_table(32, 64)                     # (S, D) float64
unit = table / np.linalg.norm(table, axis=1, keepdims=True)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
image = left.imshow(table, aspect="auto", cmap="RdBu", vmin=-1, vmax=1)
left.set_xlabel("feature (0 .. D - 1)")
left.set_ylabel("position")
left.set_title("PE[p]: fast waves on the left, slow on the right")
fig.colorbar(image, ax=left)
similarity = right.imshow(unit @ unit.T, cmap="viridis", vmin=-1, vmax=1)
right.set_xlabel("position")
right.set_ylabel("position")
right.set_title("cosine similarity: a band along the diagonal")
fig.colorbar(similarity, ax=right)
plt.show()

# %% [markdown]
# **What to look for:** on the right, the same band at every position: how alike two
# positions are depends on how far apart they are, not on where they are.
#
# ## RoPE: a score that depends on distance only
# `F.rope(x)` rotates x (..., S, d) by its positions. Give every position the same vector,
# rotate q and k, and the score of query m with key n depends only on m - n:

# %%
d = 16
same = ta.ones(1, 12, d, dtype="float64")
q_rot, k_rot = F.rope(same), F.rope(same)
scores = (q_rot @ k_rot.transpose(-2, -1)).numpy()[0] / d    # (S, S)
print("score(m=5, n=2) =", scores[5, 2].round(6), " score(m=9, n=6) =", scores[9, 6].round(6))
print("every diagonal constant:",
      all(np.allclose(np.diag(scores, o), np.diag(scores, o)[0]) for o in range(-11, 12)))

# %% [markdown]
# ## RoPE and ALiBi as a GPT draws them
# The training script writes these figures as `positional.png` (each title ends with a
# line on what to look for); the sinusoidal one is the table drawn above.

# %%
for kind in ("rope", "alibi"):
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=16, n_layer=1, n_head=4,
                                d_model=32, pos_encoding=kind))
    positional_figure(model, 16)
plt.show()

# %% [markdown]
# ## Exercises (10 minutes)
# 1. Repeat the shuffle experiment with a causal mask. Is the output still unchanged?
#    Which query's output is, and why (see `--pos-encoding none` in
#    [see_it.md](../../docs/see_it.md#what-positions-buy---pos-encoding-none))?
# 2. In the RoPE cell, use random q and k vectors (the same at every position). Is every
#    diagonal of the score matrix still constant?
