# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10. From RNN to attention
#
# Attention was invented for recurrent networks. A recurrent layer reads a sequence one
# step at a time, carrying a hidden state $h_t$; an encoder-decoder squeezes the whole
# source into its last state. Two problems follow: the steps cannot run in parallel, and
# what was read long ago fades on its way through many steps. Bahdanau et al. (2014) let
# the decoder look back at every encoder state (additive attention); Luong et al. (2015)
# scored with a dot product; "Attention Is All You Need" (2017) dropped the recurrence.
#
# This notebook: tinyattn's `nn.GRU`/`nn.LSTM` (PyTorch's layers, packed sequences
# included), the gradient fading through time, measured, and a GRU encoder-decoder with
# Bahdanau attention learning to reverse digits, with its alignment drawn. Doc:
# [nn.md#recurrent-layers](../../docs/nn.md#recurrent-layers) and the derivation
# [derivations.md#recurrent-cells](../../docs/derivations.md#recurrent-cells); the longer
# experiment is `examples/rnn_to_attention.py`. Previous: [09](09_pretrained_models.ipynb);
# start page: [learn.md](../../docs/learn.md).

# %%
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn
from tinyattn.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# %% [markdown]
# ## A recurrent layer, and packed sequences
#
# `nn.GRU(input_size, hidden_size)` takes (S, B, I) by default (sequence first, as
# PyTorch), returns every step's state and the last one. A packed batch steps each
# sequence only up to its own length, so its `h_n` is taken at its own last step.

# %%
ta.manual_seed(0)
gru = nn.GRU(input_size=3, hidden_size=4)
x = ta.randn(5, 2, 3)                                     # (S, B, I)
output, h_n = gru(x)
print("output", output.shape, " h_n", h_n.shape)         # (S, B, H), (layers, B, H)
print("h_n is the last step:", np.allclose(h_n.numpy()[0], output.numpy()[-1]))

packed = pack_padded_sequence(x, lengths=[5, 3])          # the second sequence has 3 steps
packed_out, packed_h = gru(packed)
padded, lengths = pad_packed_sequence(packed_out)
print("lengths", lengths.tolist(), " steps past the end are zeros:",
      bool((padded.numpy()[3:, 1] == 0).all()))
print("h_n of sequence 1 = its step 2:", np.allclose(packed_h.numpy()[0, 1],
                                                     padded.numpy()[2, 1]))

# %% [markdown]
# ## The gradient fades through time
#
# How much does the input at step $t$ matter to the last output? Backpropagate from the
# last step's output and measure the gradient at each input step. Through a tanh RNN it is
# multiplied, step after step, by $W_{hh}^\top \mathrm{diag}(1 - h_t^2)$: with small
# weights it shrinks geometrically. LSTM's cell state and GRU's interpolation give it an
# additive path: freshly initialised, they fade too, but more slowly (here about a hundred
# times less over 40 steps), and training can open a forget gate to keep a path whole.

# %%
steps, hidden = 40, 16
norms = {}
for name, kind in [("RNN (tanh)", nn.RNN), ("GRU", nn.GRU), ("LSTM", nn.LSTM)]:
    ta.manual_seed(1)
    layer = kind(1, hidden).double()
    inputs = ta.randn(steps, 1, 1, dtype=ta.float64, requires_grad=True)
    out, _ = layer(inputs)
    out[-1].sum().backward()                              # a loss on the last step only
    norms[name] = np.abs(inputs.grad.numpy()[:, 0, 0])

fig, ax = plt.subplots(figsize=(6, 3.5))
for name, values in norms.items():
    ax.semilogy(np.arange(steps), values, marker=".", label=name)
ax.set_xlabel("input step t")
ax.set_ylabel("|d out[-1] / d x_t|")
ax.set_title("The gradient reaching step t from the last output")
ax.legend()
plt.show()
print({name: f"{v[0] / v[-1]:.1e}" for name, v in norms.items()}, "(step 0 / last step)")

# %% [markdown]
# ## An encoder-decoder with Bahdanau attention
#
# The task: reverse six digits. The last target digit is the first source digit, the
# farthest back. The decoder is a `GRUCell`; at every step `nn.AdditiveAttention` scores
# each encoder state against the previous decoder state,
# $w_v^\top \tanh(W_q s_{t-1} + W_k h_j)$, and the softmax-weighted sum of the encoder
# states joins the decoder's input.

# %%
DIGITS, START, LENGTH, H = 10, 10, 6, 32


def batch_of(rng, size):
    source = rng.integers(0, DIGITS, size=(size, LENGTH))
    target = source[:, ::-1].copy()
    decoder_in = np.concatenate([np.full((size, 1), START), target[:, :-1]], axis=1)
    return ta.tensor(source), ta.tensor(decoder_in), ta.tensor(target)


class Reverser(nn.Module):
    def __init__(self):
        self.embed = nn.Embedding(DIGITS + 1, H)
        self.encoder = nn.GRU(H, H, batch_first=True)
        self.attention = nn.AdditiveAttention(H, H, H)
        self.cell = nn.GRUCell(2 * H, H)
        self.out = nn.Linear(H, DIGITS + 1)

    def forward(self, source, decoder_in):
        memory, h_n = self.encoder(self.embed(source))   # (B, L, H), (1, B, H)
        state, steps, weights = h_n[0], [], []
        for t in range(decoder_in.shape[1]):
            context = self.attention(state.unsqueeze(1), memory, memory)   # (B, 1, H)
            weights.append(self.attention.attention_weights[:, 0])          # (B, L)
            step_in = ta.cat([self.embed(decoder_in[:, t]), context[:, 0]], dim=-1)
            state = self.cell(step_in, state)
            steps.append(state)
        return self.out(ta.stack(steps, dim=1)), ta.stack(weights, dim=1)


ta.manual_seed(0)
rng = np.random.default_rng(0)
model = Reverser()
optimizer = ta.optim.Adam(model.parameters(), lr=1e-2)
for step in range(400):
    source, decoder_in, target = batch_of(rng, 32)
    logits, _ = model(source, decoder_in)
    loss = F.cross_entropy(logits.reshape(-1, DIGITS + 1), target.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 100 == 99:
        print(f"step {step + 1}: loss {loss.item():.3f}")

source, decoder_in, target = batch_of(np.random.default_rng(1), 256)
with ta.no_grad():
    logits, weights = model(source, decoder_in)
accuracy = (logits.argmax(dim=-1).numpy() == target.numpy()).mean()
print(f"held-out accuracy {accuracy:.3f}")

# %% [markdown]
# The alignment: row $i$ is the decoder's attention at target step $i$ over the six source
# positions. Reversal reads the source backwards, so the weight sits on an anti-diagonal:
# each step looks one position further left. It is shifted by one: from the second step
# on, target step $i$ (digit $5 - i$ of the source) looks at position $6 - i$. Our reading:
# the encoder reads left to right, so its state at position $j$ has already seen digit
# $j - 1$; Bahdanau et al. used a bidirectional encoder, whose state at $j$ is centred on
# $j$ (exercise 2).

# %%
fig, ax = plt.subplots(figsize=(4.5, 4))
image = ax.imshow(weights.numpy()[0], cmap="viridis", vmin=0, vmax=1)
ax.set_xticks(range(LENGTH), [str(d) for d in source.numpy()[0]])
ax.set_yticks(range(LENGTH), [str(d) for d in target.numpy()[0]])
ax.set_xlabel("source digit (position)")
ax.set_ylabel("target digit (step)")
ax.set_title("Bahdanau attention: an anti-diagonal")
fig.colorbar(image, ax=ax)
plt.show()

# %% [markdown]
# ## The longer experiment: five models, three lengths
#
# `examples/rnn_to_attention.py` trains five models on the same reversal task at 4, 8 and
# 12 digits: the GRU encoder-decoder without attention, with Bahdanau attention, with
# Luong's dot and general scores, and a one-layer transformer (a few minutes; its recorded
# run, drawn by `docs/make_figures.py` from `docs/results/rnn_to_attention.json`):
#
# ![accuracy against length](../../docs/figures/rnn_accuracy_vs_length.png)
#
# Without attention the accuracy falls fastest as the sequences grow: the whole source has
# to pass through one (B, H) state. With attention the decoder looks the digit up.
#
# ![gradient reach](../../docs/figures/rnn_gradient_reach.png)
#
# The gradient from the last target token back to each source position: through the plain
# encoder-decoder as initialised it is about 300 times weaker at position 0 (the one the
# last token needs) than at position 11 (trained, still 3.6 times); through attention it
# arrives in one step.
#
# ![alignment](../../docs/figures/rnn_alignment.png)
#
# The trained Bahdanau model's weights at 12 digits: the anti-diagonal of reversal, within
# one position (the shift explained above), blurred after only 150 steps.

# %% [markdown]
# ## Exercises
#
# 1. Change `ta.manual_seed(1)` in the gradient cell, or multiply the RNN's `weight_hh_l0`
#    by 3 before the forward (inside `with ta.no_grad():`). When does the gradient explode
#    instead of fade?
# 2. Make the encoder bidirectional (`nn.GRU(H, H, batch_first=True, bidirectional=True)`,
#    key size 2H, the cell's input 3H, and start the decoder from `h_n[1]`): does the
#    anti-diagonal move by one? Then remove the attention altogether: how much accuracy is
#    left at six digits, and at ten?
# 3. Write one LSTM step's backward yourself: exercise 27, `python -m tinyattn.exercises
#    check lstm_cell --path my_exercises` (and 28 for the GRU).
