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
# # 8. A transformer block, and a toy training run that learns to attend
#
# A GPT is embeddings, a stack of blocks, a final norm and a linear map to the vocabulary.
# A block is two residual steps, each reading a normalised copy of the stream and adding
# its result back:
#
#     x = x + attention(ln1(x))        # tokens read from each other (causal)
#     x = x + mlp(ln2(x))              # each token computes on what it read
#
# Then the toy run of `python3 -m tinyattn train --quick`: a 2-layer GPT learns to reverse
# 8 digits (`3 1 4 1 5 9 2 6 | 6 2 9 5 1 4 1 3`) in 100 steps, and we watch its attention
# form. Doc: [nn.md, GPT](../../docs/nn.md#gpt) and
# [see_it.md, watching attention learn](../../docs/see_it.md#watching-attention-learn).
# Previous: [07](07_gradient_check_exercise.ipynb);
# next: [09, real pretrained models](09_pretrained_models.ipynb).

# %%
# %matplotlib inline
import pathlib
import tempfile

import numpy as np
import matplotlib.pyplot as plt
from IPython.display import Image, display

import tinyattn as ta
from tinyattn import nn
from tinyattn.train import TrainConfig, train

ta.manual_seed(0)

# %% [markdown]
# ## One block, step by step, with its shapes

# %%
config = nn.GPTConfig(vocab_size=12, block_size=17, n_layer=2, n_head=4, d_model=64)
model = nn.GPT(config)
ids = np.array([[3, 1, 4, 1, 5, 9, 2, 6, 10]])        # 10 stands for "|"
B, S = ids.shape
tokens = model.tok_emb(ids)                            # (B, S) -> (B, S, D)
x = model.pos_emb(tokens)                              # + learned positions: (B, S, D)
print("embeddings + positions:", tuple(x.shape))
block = model.blocks[0]
read, weights = block.attn(block.ln1(x), need_weights=True, average_attn_weights=False,
                           is_causal=True)
print("attention output:      ", tuple(read.shape), " weights", tuple(weights.shape))
x1 = x + read                                          # first residual step
x2 = x1 + block.mlp(block.ln2(x1))                     # second residual step
print("after the block:       ", tuple(x2.shape))
reference, _ = block(x)
print("same as block(x):", np.abs(reference.numpy() - x2.numpy()).max() < 1e-6)
print("parameters:", sum(p.numel() for p in model.parameters()))

# %% [markdown]
# ## Train it: the quick run
# The same as `python3 -m tinyattn train --quick` (100 steps, evaluated every 20), written
# to a temporary folder: about 10 s of CPU time, a minute or more on a busy machine. The bar
# below counts the steps as they run; the held-out evaluations print as they happen.

# %%
out = pathlib.Path(tempfile.mkdtemp(prefix="reverse_"))
metrics = train(TrainConfig(steps=100, eval_every=20, out=str(out)))
print(f"held-out exact match after {metrics['steps']} steps: "
      f"{100 * metrics['heldout_exact_match']:.1f}%  ({metrics['wall_time_s']} s)")
print(sorted(p.name for p in out.iterdir() if not p.name.startswith(".")))

# %%
display(Image(filename=str(out / "loss.png")))

# %% [markdown]
# **What to look for:** the loss sits near log(10) = 2.3 (a guess among 10 digits) for a
# few dozen steps, then falls fast; the held-out exact match jumps to 100% while it falls.

# %%
display(Image(filename=str(out / "attention_evolution.png"), width=900))

# %% [markdown]
# **What to look for:** the columns are the steps the run picked where the maps change the
# most. Row i is the query at position i (it predicts token i+1); grey cells are the
# masked future. In layer 0 an anti-diagonal appears below the `|` row: the query that
# predicts answer token k looks at prompt position 7 - k. That *is* the algorithm
# "reverse", found by gradient descent through hand-written backward passes.

# %%
display(Image(filename=str(out / "attention.png"), width=900))

# %% [markdown]
# ## Exercises (20 minutes)
# 1. Train with `pos_encoding="none"` (`TrainConfig(..., pos_encoding="none")`). What
#    accuracy do you get, and what do the maps look like? (Notebook 5 says why.)
# 2. Train `task="sort"` for 200 steps. Which key does the query that predicts the first
#    answer token look at?
# 3. From a terminal: `python3 -m tinyattn sample --checkpoint DIR --prompt "3 1 4 1 5 9
#    2 6 |"` with DIR the folder printed above.
