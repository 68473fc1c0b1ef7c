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
# # 11. Attention on images
#
# A vision transformer (ViT) reads an image as a sequence: cut it into patches, embed each
# patch, put a class token in front, add learned positions, and run the transformer encoder
# you already know. Its first layer is a convolution, so this notebook starts there:
#
# 1. a convolution by hand, then as im2col and ONE matrix product;
# 2. its backward: a convolution with the flipped kernel, and max pooling's routing;
# 3. patch embedding = a convolution with kernel = stride = patch size;
# 4. a small ViT trained on scikit-learn's 8 x 8 digits, and what it looks at.
#
# Doc: [derivations.md, convolution](../../docs/derivations.md#convolution),
# [pooling](../../docs/derivations.md#pooling) and
# [nn.md, vision transformer](../../docs/nn.md#vision-transformer).
# Previous: [09](09_pretrained_models.ipynb).

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
from sklearn.datasets import load_digits

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim

ta.manual_seed(0)
rng = np.random.default_rng(0)

# %% [markdown]
# ## A convolution by hand
# PyTorch's convolution is a cross-correlation: slide the kernel over the image, and at each
# position take the dot product of the kernel with the window under it. No flip.

# %%
image = rng.standard_normal((1, 1, 5, 5))          # (N, C, H, W)
kernel = rng.standard_normal((1, 1, 3, 3))         # (O, C, kh, kw)
by_hand = np.zeros((3, 3))
for i in range(3):
    for j in range(3):
        by_hand[i, j] = (image[0, 0, i:i + 3, j:j + 3] * kernel[0, 0]).sum()
ours = F.conv2d(ta.tensor(image), ta.tensor(kernel)).numpy()[0, 0]
print("loops vs F.conv2d, largest difference:", np.abs(by_hand - ours).max())

# %% [markdown]
# ## im2col: every window a column, one matrix product
# `F.unfold` copies each 3 x 3 window into a column: (N, C*9, L) with L = 9 windows. The
# convolution is then the kernel, flattened to a row, times that matrix.

# %%
columns = F.unfold(ta.tensor(image), kernel_size=3).numpy()[0]   # (9, L)
print("columns:", columns.shape)
as_matmul = (kernel.reshape(1, 9) @ columns).reshape(3, 3)        # (1, 9) @ (9, 9)
print("one matrix product vs F.conv2d:", np.abs(as_matmul - ours).max())

# %% [markdown]
# ## The backward: the flipped kernel
# The gradient for the input adds each output's gradient back into its window, weighted by
# the kernel. Written per pixel, that is a correlation of the (zero-padded) output gradient
# with the kernel flipped left-right and up-down. Autograd agrees:

# %%
x = ta.tensor(image, requires_grad=True)
y = F.conv2d(x, ta.tensor(kernel))
g = rng.standard_normal(y.shape)
y.backward(ta.tensor(g))
flipped = kernel[:, :, ::-1, ::-1].copy()
by_flip = F.conv2d(ta.tensor(np.pad(g, ((0, 0), (0, 0), (2, 2), (2, 2)))),
                   ta.tensor(flipped)).numpy()
print("autograd dx vs correlation with the flipped kernel:",
      np.abs(x.grad.numpy() - by_flip).max())
unflipped = F.conv2d(ta.tensor(np.pad(g, ((0, 0), (0, 0), (2, 2), (2, 2)))),
                     ta.tensor(kernel)).numpy()
print("...and with the kernel NOT flipped (the classic mistake):",
      np.abs(x.grad.numpy() - unflipped).max())

# %% [markdown]
# ## Max pooling routes the gradient
# Each window's maximum takes its whole gradient; the other elements get none. Ties: the
# first maximum in the window, as in PyTorch.

# %%
grid = ta.tensor(np.array([[[[1., 5., 2., 2.],
                             [3., 0., 2., 1.],
                             [4., 4., 0., 9.],
                             [1., 2., 3., 8.]]]]), requires_grad=True)
pooled, where = F.max_pool2d(grid, 2, return_indices=True)
pooled.sum().backward()
print("pooled:\n", pooled.numpy()[0, 0])
print("indices (h * W + w):\n", where.numpy()[0, 0])
print("gradient, one 1 per window (the tie of 2s and of 4s goes to the first):\n",
      grid.grad.numpy()[0, 0])

# %% [markdown]
# ## Patch embedding is a convolution
# With kernel = stride = P the windows do not overlap: each output position sees exactly one
# P x P patch, so `Conv2d(C, D, P, stride=P)` is "flatten each patch, apply one Linear".

# %%
embed = nn.Conv2d(1, 4, kernel_size=2, stride=2)
patches = image[0, 0, :4, :4].reshape(2, 2, 2, 2).transpose(0, 2, 1, 3).reshape(4, 4)
linear = patches @ embed.weight.numpy().reshape(4, 4).T + embed.bias.numpy()  # (N, D)
conv = embed(ta.tensor(image[:, :, :4, :4].astype(np.float32))).numpy()[0]   # (D, 2, 2)
print("patches @ W^T + b vs Conv2d(kernel=stride=2):",
      np.abs(linear - conv.reshape(4, 4).T).max())

# %% [markdown]
# ## A ViT on the digits
# 1,797 handwritten digits, 8 x 8 pixels, shipped with scikit-learn (no download); 360 held
# out. 2 x 2 patches give 16 tokens plus the class token. A short run here (the full run,
# `examples/vision_digits.py`, trains 30 epochs and reaches 0.97 held out, as a small CNN does).

# %%
digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[:, None]      # (1797, 1, 8, 8)
labels = digits.target.astype(np.int64)
order = np.random.default_rng(0).permutation(len(labels))
test, train = order[:360], order[360:]

ta.manual_seed(0)
vit = nn.VisionTransformer(image_size=8, patch_size=2, d_model=48, depth=3, num_heads=4)
opt = optim.AdamW(vit.parameters(), lr=2e-3, weight_decay=0.05)
for epoch in range(8):
    vit.train()
    for start in range(0, len(train), 64):
        batch = train[start:start + 64]
        loss = F.cross_entropy(vit(ta.tensor(images[batch])), ta.tensor(labels[batch]))
        opt.zero_grad()
        loss.backward()
        opt.step()
vit.eval()
with ta.no_grad():
    predicted = vit(ta.tensor(images[test])).numpy().argmax(axis=1)
print(f"held-out accuracy after 8 epochs: {(predicted == labels[test]).mean():.3f}")

# %% [markdown]
# ## Where the class token looks: attention rollout
# One layer's attention says little: the class token's state after layer 1 is already a mix.
# Attention rollout multiplies the layers' attention (heads averaged, the identity added for
# the residual path, rows renormalised), giving how much the final class token draws on each
# patch. Brighter = more.

# %%
shown = images[test[:6]]
with ta.no_grad():
    rollout = nn.attention_rollout(vit.attention_maps(ta.tensor(shown)))
heat = rollout[:, 0, 1:].reshape(-1, 4, 4)                         # class token over patches
fig, axes = plt.subplots(2, 6, figsize=(10, 3.6))
for i in range(6):
    axes[0, i].imshow(shown[i, 0], cmap="gray_r")
    axes[1, i].imshow(heat[i], cmap="inferno")
    for ax in axes[:, i]:
        ax.set_xticks([])
        ax.set_yticks([])
axes[0, 0].set_ylabel("digit")
axes[1, 0].set_ylabel("rollout")
fig.suptitle("Attention rollout: the class token's weight on each 2 x 2 patch")
plt.show()

# %% [markdown]
# ## Do neighbouring positions look alike?
# Each tile is one patch's learned position compared (cosine similarity) with all 16. Every
# position is most like itself (the bright cell); on 1,437 small images and a short run,
# the neighbour structure that large ViTs learn is weak.

# %%
positions = vit.pos_embed.detach().numpy()[0, 1:]                 # (16, D)
unit = positions / np.linalg.norm(positions, axis=1, keepdims=True)
similarity = unit @ unit.T
fig, axes = plt.subplots(4, 4, figsize=(5, 5))
for p in range(16):
    axes[p // 4, p % 4].imshow(similarity[p].reshape(4, 4), cmap="viridis", vmin=-1, vmax=1)
    axes[p // 4, p % 4].set_xticks([])
    axes[p // 4, p % 4].set_yticks([])
fig.suptitle("Position similarity: tile p shows cos(pos[p], pos[q]) over q")
plt.show()

# %% [markdown]
# ## The patch filters
# Each of the D output channels of the patch embedding is a 2 x 2 filter: what that
# dimension of a token measures in its patch.

# %%
filters = vit.patch_embed.weight.detach().numpy()[:, 0]         # (D, 2, 2)
fig, axes = plt.subplots(2, 8, figsize=(8, 2.4))
for i, ax in enumerate(axes.flat):
    ax.imshow(filters[i], cmap="RdBu_r")
    ax.set_xticks([])
    ax.set_yticks([])
fig.suptitle("The first 16 patch-embedding filters")
plt.show()

# %% [markdown]
# ## Where next
# Train longer and compare with the CNN: `python examples/vision_digits.py --figures out/`.
# The derivations of every op used here are in
# [derivations.md](../../docs/derivations.md#convolution).
