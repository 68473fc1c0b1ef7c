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
# # 7. Exercise: write softmax's backward, and let the checker judge it
#
# The exercises give you an op's forward in NumPy and ask for its backward. The checker
# runs your file in a separate process, does a float64 gradient check over the full
# Jacobian on several shapes (saturated rows, one class, ...), compares with the reference
# on random upstream gradients, and on a failure names the input, the worst element and
# the mistake it looks like. Here you do exercise 06 (softmax) inside the notebook; the
# same works from a terminal:
#
#     python3 -m tinyattn.exercises start my_exercises
#     python3 -m tinyattn.exercises check softmax --path my_exercises
#
# Doc: [exercises.md](../../docs/exercises.md) and
# [derivations.md, softmax](../../docs/derivations.md#softmax) (read it after trying).
# Previous: [06](06_engine.ipynb);
# next: [08, training a transformer](08_transformer_training.ipynb).

# %%
import pathlib
import tempfile

import numpy as np

import tinyattn as ta
from tinyattn.exercises import check, start

folder = pathlib.Path(tempfile.mkdtemp(prefix="my_exercises_"))
start(str(folder))                                   # copies the exercise files
stub = folder / "06_softmax.py"
print(stub.read_text().split('"""')[1])              # the task, shapes and hints


def answer(body):
    """Write ``body`` (the inside of softmax_backward) into the exercise file."""
    text = stub.read_text()
    head = text.split("def softmax_backward", 1)[0]
    stub.write_text(head + "def softmax_backward(grad, cache):\n"
                    '    """Return dx, of x\'s shape."""\n'
                    "    (y,) = cache\n" + "".join(f"    {line}\n" for line in body))


# %% [markdown]
# ## A first attempt: only the diagonal of the Jacobian
# A common first answer treats each output as depending only on its own input:
# dy_i/dx_i = y_i (1 - y_i), so dx = grad * y * (1 - y). The checker says what is wrong:

# %%
answer(["return grad * y * (1 - y)"])
result = check("softmax", path=str(folder))
print(result.text)

# %% [markdown]
# ## Your turn
# Replace the line below with your own backward (hint: dx_j = sum_i grad_i dy_i/dx_j, with
# dy_i/dx_j = y_i (delta_ij - y_j); do not build the (C, C) matrix). The cell as given
# holds one right answer so that the notebook runs top to bottom; delete it and try.

# %%
MY_BACKWARD = ["return y * (grad - (grad * y).sum(axis=-1, keepdims=True))"]
answer(MY_BACKWARD)
result = check("softmax", path=str(folder))
print(result.text)
print("passed:", result.passed)

# %% [markdown]
# ## The same check with `ta.gradcheck`
# For an op written with tinyattn tensors, `ta.gradcheck` compares the backward with
# central finite differences in float64, element by element:

# %%
import tinyattn.functional as F

x = ta.randn(3, 5, dtype="float64", requires_grad=True)
print("softmax:", ta.gradcheck(lambda t: F.softmax(t, dim=-1), [x]))
# detach() hides softmax from the engine: the backward then treats it as a constant
wrong = ta.gradcheck(lambda t: F.softmax(t, dim=-1).detach() * t, [x], raise_exception=False)
print("softmax(t).detach() * t, whose backward is wrong:", wrong)

# %% [markdown]
# ## Exercises (20 minutes)
# 1. Do exercise 08 (masked softmax) in the same folder: `answer` writes only softmax;
#    open `folder / "08_masked_softmax.py"` in an editor, and run
#    `print(check("masked_softmax", path=str(folder)).text)`.
# 2. Plant a factor of 2 in your softmax backward. What does the checker call it?
# 3. When every ops exercise passes, `python3 -m tinyattn train --backward-from FOLDER`
#    trains the toy transformer with *your* backward passes (docs/exercises.md).
