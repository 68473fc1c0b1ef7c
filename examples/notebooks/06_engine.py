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
# # 6. The engine: a graph, its topological order, the backward walk
#
# Every op on tensors that require a gradient records itself: the output remembers the
# `Function` that made it, and the Function remembers its inputs. `loss.backward()` then
# walks that graph from the loss back to the leaves, calling each op's hand-written
# `backward` once, **after every op that used its output** has sent its gradient (a
# topological order), and adding up the gradients of a value used twice.
#
# This notebook draws the graph (`tinyattn.viz.draw_graph`), prints the walk
# (`tinyattn.viz.trace_backward`) and checks the numbers by hand, first on micrograd's own
# example, then on one attention. Doc: [see_it.md](../../docs/see_it.md) and
# [derivations.md, autograd](../../docs/derivations.md#autograd).
# Previous: [05](05_positional_encodings.ipynb);
# next: [07, a gradient check exercise](07_gradient_check_exercise.ipynb).

# %%
# %matplotlib inline
import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn.viz import build_graph, draw_graph, trace_backward

# %% [markdown]
# ## micrograd's example: L = (a * b + c) * f

# %%
a, b, c, f = (ta.tensor(value, dtype="float64", requires_grad=True)
              for value in (2.0, -3.0, 10.0, -2.0))
e = a * b
d = e + c
L = d * f
for t in (e, d, L):
    t.retain_grad()                      # keep .grad on intermediates too, to show them
names = {"a": a, "b": b, "c": c, "f": f, "e": e, "d": d, "L": L}
with trace_backward(params=names) as walk:
    L.backward()

# %% [markdown]
# Read the walk top to bottom: the engine starts at L's op (`Mul#1`), whose backward sends
# dL/dd = f = -2 to the `Add` and dL/df = d = 4 to the leaf f. The `Add` passes -2 on to
# both its inputs, and the last `Mul` sends -2 * b = 6 to a and -2 * a = -4 to b. By hand:

# %%
print("dL/da =", a.grad.item(), "  by hand: f * b =", f.item() * b.item())
print("dL/db =", b.grad.item(), "  by hand: f * a =", f.item() * a.item())
print("order the engine called the backwards:", walk.ops())
draw_graph(L, params=names, direction="LR")     # a Figure: the notebook shows it

# %% [markdown]
# **What to look for:** every box shows its value (`data`) and gradient (`grad`), as
# micrograd's `draw_dot` does; arrows follow the forward pass, and the backward walked
# them right to left, in the order printed above.
#
# ## A value used twice
# y = x * x uses x twice; the engine adds both contributions: dy/dx = x + x.

# %%
x = ta.tensor(3.0, dtype="float64", requires_grad=True)
y = x * x
y.backward()
print("d(x*x)/dx at 3:", x.grad.item())

# %% [markdown]
# ## The topological order, by hand
# `build_graph` returns the graph as data. Kahn's algorithm: repeatedly take an op all of
# whose consumers are done. This is the order the engine uses (it never recurses, so a
# chain of 10,000 ops does not hit Python's recursion limit).

# %%
graph = build_graph(L, params=names)
ops = {n.index: n for n in graph.ops}
consumers = {i: [t for s, t, _ in graph.edges if s == i and t in ops] for i in ops}
waiting = {i: len(consumers[i]) for i in ops}
ready = [i for i in ops if waiting[i] == 0]
order = []
while ready:
    op = ready.pop()
    order.append(ops[op].name or ops[op].title)
    for s, t, _ in graph.edges:
        if t == op and s in ops:
            waiting[s] -= 1
            if waiting[s] == 0:
                ready.append(s)
print(order)

x = ta.tensor(1.0, dtype="float64", requires_grad=True)
chain = x
for _ in range(10_000):
    chain = chain * 1.0001
chain.backward()
print("10,000 ops deep, dchain/dx =", round(x.grad.item(), 4), "= 1.0001 ** 10000 =",
      round(1.0001 ** 10000, 4))

# %% [markdown]
# ## One attention, opened up
# `F.scaled_dot_product_attention` is **one** op with one hand-derived backward. With
# `expand=True`, `draw_graph` draws the parts of its forward so you can see what the
# backward has to undo.

# %%
ta.manual_seed(0)
q, k, v = (ta.randn(1, 1, 3, 2, dtype="float64", requires_grad=True) for _ in range(3))
loss = (F.scaled_dot_product_attention(q, k, v, is_causal=True) ** 2).sum()
with trace_backward(params={"q": q, "k": k, "v": v}):
    loss.backward(retain_graph=True)
draw_graph(loss, params={"q": q, "k": k, "v": v}, expand=True, direction="LR")

# %% [markdown]
# ## Exercises (15 minutes)
# 1. Draw the graph of `(x * x).sum()` for a (3,) tensor x. How many arrows go from x to
#    the `Mul`, and what does the label on the arrow say?
# 2. Trace `F.layer_norm` on a (2, 4) input. Which op's backward runs first, which last?
# 3. Why must the engine wait for *every* consumer before calling an op's backward? Build a
#    diamond (h used by two ops) and reason about what would go wrong otherwise.
