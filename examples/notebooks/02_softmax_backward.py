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
# # 2. Softmax and its backward, checked by finite differences
#
# y = softmax(x) over a row: y_i = exp(x_i) / sum_j exp(x_j). Every y_i depends on every
# x_j through the sum, so the Jacobian is a full matrix:
#
#     dy_i / dx_j = y_i (delta_ij - y_j)      i.e.  J = diag(y) - y y^T
#
# The backward receives g = dL/dy and must return dL/dx = J^T g. Because J is symmetric,
#
#     dL/dx = y * (g - sum_i g_i y_i)
#
# one row-sum, never the (C, C) matrix. This notebook checks that formula three ways:
# against the full Jacobian, against tinyattn's own backward, and against finite
# differences; and shows why finite differences need float64.
# Doc: [derivations.md, softmax](../../docs/derivations.md#softmax).
# Previous: [01](01_qkv_scaled_dot_product.ipynb); next: [03, masks](03_masks.ipynb).

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

import tinyattn as ta
import tinyattn.functional as F

rng = np.random.default_rng(0)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))     # minus the max: no overflow
    return e / e.sum(axis=-1, keepdims=True)


# %% [markdown]
# ## The formula against the full Jacobian and tinyattn's backward

# %%
x = rng.standard_normal(5)
g = rng.standard_normal(5)                 # an upstream gradient dL/dy
y = softmax(x)
jacobian = np.diag(y) - np.outer(y, y)     # (C, C)
by_matrix = jacobian.T @ g
by_formula = y * (g - (g * y).sum())

xt = ta.tensor(x, dtype="float64", requires_grad=True)
(F.softmax(xt, dim=-1) * ta.tensor(g, dtype="float64")).sum().backward()   # L = g . y
print("formula vs Jacobian:       ", np.abs(by_formula - by_matrix).max())
print("formula vs tinyattn's grad:", np.abs(by_formula - xt.grad.numpy()).max())

# %% [markdown]
# ## Finite differences
# dL/dx_j is about (L(x + eps e_j) - L(x - eps e_j)) / (2 eps). The error of that estimate
# has two parts: truncation (the eps^2 term of the Taylor series, small for small eps) and
# round-off (float rounding of L divided by 2 eps, large for small eps). Their sum is
# smallest in between, and in float32 the best is far worse than in float64:

# %%
def loss(x, dtype):
    return float((softmax(x.astype(dtype)) * g.astype(dtype)).sum())


def central_difference(x, eps, dtype):
    grad = np.zeros_like(x)
    for j in range(len(x)):
        step = np.zeros_like(x)
        step[j] = eps
        grad[j] = (loss(x + step, dtype) - loss(x - step, dtype)) / (2 * eps)
    return grad


steps = np.logspace(-12, -1, 23)
errors = {dtype: [np.abs(central_difference(x, eps, dtype) - by_formula).max()
                  for eps in steps] for dtype in (np.float32, np.float64)}

fig, ax = plt.subplots(figsize=(6, 3.8))
for dtype, label in ((np.float64, "float64"), (np.float32, "float32")):
    ax.loglog(steps, np.maximum(errors[dtype], 1e-17), "o-", label=label)
ax.set_xlabel("finite-difference step eps")
ax.set_ylabel("largest error against the formula")
ax.set_title("truncation (right) against round-off (left)")
ax.legend()
plt.show()
best = {d.__name__: steps[int(np.argmin(e))] for d, e in errors.items()}
print("best step:", best)
print("best error float64:", min(errors[np.float64]), " float32:", min(errors[np.float32]))

# %% [markdown]
# **What to look for:** a V in each curve. float64's bottom is around 1e-11, float32's
# around 1e-6, five orders of magnitude worse, at a step a thousand times larger. A float32
# check would need tolerances loose enough to let small mistakes through, which is why
# `ta.gradcheck` works in float64:

# %%
xt = ta.tensor(rng.standard_normal((3, 5)), dtype="float64", requires_grad=True)
print(ta.gradcheck(lambda t: F.softmax(t, dim=-1), [xt]))

# %% [markdown]
# ## Saturation: the gradient of a one-hot softmax
# Notebook 1 said a nearly one-hot softmax has a nearly zero gradient. With y = e_k the
# formula gives y * (g - g_k) = 0 in every entry: scale up the scores and watch the
# gradient's norm collapse.

# %%
for scale in (1, 4, 16, 64):
    y = softmax(scale * x)
    print(f"scores x {scale:3d}: max weight {y.max():.4f}, "
          f"|dL/dx| = {np.linalg.norm(y * (g - (g * y).sum())):.2e}")

# %% [markdown]
# ## Exercises (15 minutes)
# 1. Write the backward of log_softmax, z = x - log sum exp(x): dL/dx = g - softmax(x) *
#    sum(g). Check it against `F.log_softmax` with `ta.gradcheck` as above.
# 2. Drop the off-diagonal part (use `y * (1 - y) * g`, the diagonal of J only). How large
#    is the error? This is one of the mistakes the exercise checker recognises (notebook 7).
