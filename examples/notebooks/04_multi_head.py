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
# # 4. Multi-head attention: h attentions in h subspaces
#
# One attention computes one set of weights per query. Multi-head attention splits the
# model width D into h heads of d_k = D / h features each, runs h attentions side by side,
# each in its own subspace with its own weights, and concatenates the results:
#
#     Q = x W_q,  K = x W_k,  V = x W_v                         (B, S, D)
#     split:  (B, S, D) -> (B, S, h, d_k) -> (B, h, S, d_k)
#     per head:  softmax(Q_h K_h^T / sqrt(d_k)) V_h             (B, h, S, d_k)
#     merge:  (B, h, S, d_k) -> (B, S, h, d_k) -> (B, S, D),  then out = merged W_o
#
# This notebook does each step by hand with the weights of `nn.MultiHeadAttention`, prints
# every shape, and checks the result against the module. Doc:
# [nn.md, multi-head attention](../../docs/nn.md#multi-head-attention).
# Previous: [03](03_masks.ipynb); next: [05, positional encodings](05_positional_encodings.ipynb).

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim

ta.manual_seed(0)
B, S, D, h = 2, 6, 16, 4
d_k = D // h
mha = nn.MultiHeadAttention(D, h).to(dtype="float64")
x = ta.randn(B, S, D, dtype="float64")
print(mha.summary())

# %% [markdown]
# ## Step by step

# %%
def shape(name, t):
    print(f"{name:<28} {tuple(t.shape)}")
    return t


q = shape("Q = x W_q^T + b_q", mha.q_proj(x))                       # (B, S, D)
k = shape("K", mha.k_proj(x))
v = shape("V", mha.v_proj(x))
q = shape("split: (B, S, h, d_k)", q.reshape(B, S, h, d_k))
q = shape("heads first: (B, h, S, d_k)", q.transpose(1, 2))
k = k.reshape(B, S, h, d_k).transpose(1, 2)
v = v.reshape(B, S, h, d_k).transpose(1, 2)
scores = shape("scores Q K^T: (B, h, S, S)", q @ k.transpose(-2, -1) / np.sqrt(d_k))
weights = shape("weights: softmax per row", F.softmax(scores, dim=-1))
heads = shape("per head: weights V", weights @ v)                   # (B, h, S, d_k)
merged = shape("merge: (B, S, h * d_k)", heads.transpose(1, 2).reshape(B, S, D))
by_hand = shape("out = merged W_o^T + b_o", mha.out_proj(merged))

# %%
out, module_weights = mha(x, need_weights=True, average_attn_weights=False)
print("module output", tuple(out.shape), "weights", tuple(module_weights.shape))
print("largest difference, by hand vs module:", np.abs(by_hand.numpy() - out.numpy()).max())
print("weights by hand vs module:", np.abs(weights.numpy() - module_weights.numpy()).max())

# %% [markdown]
# ## Heads are subspaces
# Head 2 reads only features 2 d_k .. 3 d_k - 1 of Q and K (its rows of W_q, W_k). Change
# the input only along directions that W_q and W_k of head 2 cannot see, and head 2's
# weights do not move while the other heads' do:

# %%
w_qk = np.concatenate([mha.q_proj.weight.numpy()[2 * d_k:3 * d_k],
                       mha.k_proj.weight.numpy()[2 * d_k:3 * d_k]])       # (2 d_k, D)
_, _, vt = np.linalg.svd(w_qk)
invisible = vt[2 * d_k:]                   # directions of x that head 2's q and k ignore
nudge = ta.tensor(np.random.default_rng(1).standard_normal((B, S, len(invisible)))
                  @ invisible, dtype="float64")
_, nudged = mha(x + nudge, need_weights=True, average_attn_weights=False)
change = np.abs(nudged.numpy() - module_weights.numpy()).max(axis=(0, 2, 3))
for head, c in enumerate(change):
    print(f"head {head}: largest change of a weight {c:.2e}")

# %%
fig, axes = plt.subplots(1, h, figsize=(12, 3.2))
for head, ax in enumerate(axes):
    image = ax.imshow(module_weights.numpy()[0, head], cmap="viridis", vmin=0, vmax=1)
    ax.set_title(f"head {head}")
    ax.set_xlabel("key j")
axes[0].set_ylabel("query i")
fig.colorbar(image, ax=axes, label="attention weight")
fig.suptitle("one input, four heads, four different weightings (untrained weights)")
plt.show()

# %% [markdown]
# **What to look for:** head 2's change is at round-off (1e-16) while the others change by
# 1e-2 or more: each head attends with its own slice of the model's width. Untrained, the
# weights are spread out over the keys: random projections give small, similar scores, and
# no head has learned where to look.
#
# ## A trained head
# Train a fresh module of the same size for 100 steps on one job: the output at position i
# must be the content of the token at position i - 1 ("copy the previous token"). Each
# input is random content plus a marker of its position (feature p set at position p), so
# a head can find "the position before mine". Untrained heads beside trained ones:

# %%
ta.manual_seed(1)
student = nn.MultiHeadAttention(D, h).to(dtype="float64")
before = student(x, need_weights=True, average_attn_weights=False)[1].numpy()[0]
marker = 3.0 * np.eye(S, D)[None]                            # (1, S, D): position p's feature
rng = np.random.default_rng(0)
opt = optim.Adam(student.parameters(), lr=0.02)
for step in range(100):
    content = rng.standard_normal((32, S, D))
    content[..., :S] = 0                                     # the markers' features stay free
    target = ta.tensor(np.roll(content, 1, axis=1))          # position i gets content i - 1
    out, _ = student(ta.tensor(content + marker))
    loss = ((out - target)[:, 1:] ** 2).mean()               # position 0 has no previous
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss after 100 steps: {loss.item():.1e}")
probe = ta.tensor(content[:1] + marker)
after = student(probe, need_weights=True, average_attn_weights=False)[1].numpy()[0]
fig, axes = plt.subplots(2, h, figsize=(12, 6))
for head in range(h):
    for row, (maps, when) in enumerate(((before, "untrained"), (after, "trained"))):
        image = axes[row, head].imshow(maps[head], cmap="viridis", vmin=0, vmax=1)
        axes[row, head].set_title(f"head {head}, {when}", fontsize=10)
    axes[1, head].set_xlabel("key j")
axes[0, 0].set_ylabel("query i")
axes[1, 0].set_ylabel("query i")
fig.colorbar(image, ax=axes, label="attention weight")
fig.suptitle("trained to copy the previous token: row i puts its weight on key i - 1")
plt.show()

# %% [markdown]
# **What to look for:** the top row is spread out; in the bottom row every row i >= 1 has
# one bright cell, at key i - 1 (a line just below the diagonal): the heads learned where to
# look from the gradient alone. Row 0 has no previous token and spreads its weight.
#
# ## Exercises (15 minutes)
# 1. Repeat the subspace experiment for head 0. Then nudge along a direction head 2 *can*
#    see (a row of `w_qk`) and check that its weights move.
# 2. With h = 1 and h = 16 (d_k = 1), how do the weight maps change? What can one head of
#    width 1 express?
