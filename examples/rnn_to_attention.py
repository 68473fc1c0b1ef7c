"""From RNN to attention, measured: a GRU encoder-decoder without attention, with Bahdanau
(additive) attention, with Luong (dot and general) attention, and a transformer, trained to
reverse digit sequences of growing length.

    python examples/rnn_to_attention.py                  # about 3 minutes of one CPU core
    python examples/rnn_to_attention.py --quick          # seconds: a smoke run
    python examples/rnn_to_attention.py --out-dir runs/rnn_to_attention

What it prints and draws (PNG files in --out-dir when matplotlib is installed):

1. accuracy_vs_length.png: held-out per-token accuracy (teacher forcing) against the
   sequence length, one line per model. Reversal needs the first source digit for the last
   target digit: without attention it must survive the whole encoder and decoder in one
   (B, H) state; with attention the decoder looks it up.
2. gradient_reach.png: the norm of the gradient that reaches each source position's
   embedding from the loss on the *last* target token (which depends on source position 0),
   for the models as initialised and trained, at the longest length. Through the plain RNN
   it has to travel back through every step; through attention it arrives in one step.
3. alignment.png: the Bahdanau model's attention weights (target step x source step) on a
   held-out sequence: reversal shows as the anti-diagonal.

The default run (lengths 4 8 12, 150 steps, seed 0) took 181 s of CPU on a shared 2-core
AMD EPYC at load average 14-21 (22 minutes of wall time at 13% of a core), and printed
held-out accuracy at L = 4 / 8 / 12: no attention 0.931 / 0.595 / 0.444; Bahdanau 0.986 /
0.811 / 0.633; Luong dot 0.989 / 0.906 / 0.843; Luong general 0.985 / 0.896 / 0.802;
transformer 1.000 / 1.000 / 1.000. 150 steps is short: these say "attention holds up
longer", not where each model would end. docs/make_figures.py runs it and keeps its record
(docs/results/rnn_to_attention.json); --plot-only RESULTS_JSON redraws from a record. The
run prints its progress and writes results.json in --out-dir after every model and length,
so an interrupted run (Ctrl-C) keeps and draws what it finished.

Shapes: B batch, L sequence length, H hidden width, V = 11 (ten digits and a start token).
The decoders are teacher-forced (they read the true previous digit); Luong's
"input feeding" is left out. docs/learn.md's notebook 10 walks through the same story.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn

__all__ = ["Seq2Seq", "TransformerSeq2Seq", "make_batch", "train", "accuracy",
           "gradient_reach", "alignment", "save_results", "load_results", "run", "plot",
           "main"]

DIGITS, START = 10, 10
VOCAB = 11
MODELS = ("no attention", "Bahdanau", "Luong dot", "Luong general", "transformer")


def make_batch(rng: np.random.Generator, batch: int, length: int):
    """(source, decoder input, target), each (B, L) int64: target = source reversed."""
    source = rng.integers(0, DIGITS, size=(batch, length))
    target = source[:, ::-1].copy()
    decoder_in = np.concatenate([np.full((batch, 1), START), target[:, :-1]], axis=1)
    return ta.tensor(source), ta.tensor(decoder_in), ta.tensor(target)


class Seq2Seq(nn.Module):
    """Embedding -> GRU encoder -> GRU decoder (started from the encoder's h_n), with
    ``attention`` None, "bahdanau" (query: the previous decoder state; the context joins the
    decoder's input, as Bahdanau et al.), "dot" or "general" (Luong: attend from the new
    decoder state, then out = W_o tanh(W_c [h_t; context]))."""

    def __init__(self, hidden: int = 32, attention: Optional[str] = None):
        self.attention_kind, self.hidden = attention, hidden
        self.embed = nn.Embedding(VOCAB, hidden)
        self.encoder = nn.GRU(hidden, hidden, batch_first=True)
        if attention == "bahdanau":
            self.attention = nn.AdditiveAttention(hidden, hidden, hidden)
            self.decoder_cell = nn.GRUCell(2 * hidden, hidden)
        else:
            self.decoder = nn.GRU(hidden, hidden, batch_first=True)
            if attention in ("dot", "general"):
                self.attention = nn.LuongAttention(hidden, hidden, score=attention)
                self.combine = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, VOCAB)

    def encode(self, source_embedded: ta.Tensor):
        return self.encoder(source_embedded)            # (B, L, H), (1, B, H)

    def forward(self, source: ta.Tensor, decoder_in: ta.Tensor,
                source_embedded: Optional[ta.Tensor] = None) -> ta.Tensor:
        if source_embedded is None:
            source_embedded = self.embed(source)         # (B, L) -> (B, L, H)
        memory, h_n = self.encode(source_embedded)
        target_embedded = self.embed(decoder_in)          # (B, L, H)
        if self.attention_kind == "bahdanau":
            state, outputs = h_n[0], []                   # (B, H)
            for t in range(decoder_in.shape[1]):
                context = self.attention(state.unsqueeze(1), memory, memory)  # (B, 1, H)
                step_in = ta.cat([target_embedded[:, t], context[:, 0]], dim=-1)  # (B, 2H)
                state = self.decoder_cell(step_in, state)
                outputs.append(state)
            return self.out(ta.stack(outputs, dim=1))    # (B, L, H) -> (B, L, V)
        states, _ = self.decoder(target_embedded, h_n)   # (B, L, H)
        if self.attention_kind is None:
            return self.out(states)
        context = self.attention(states, memory, memory)  # (B, L, H)
        return self.out(F.tanh(self.combine(ta.cat([states, context], dim=-1))))


class TransformerSeq2Seq(nn.Module):
    """nn.Transformer (one encoder and one decoder layer) with learned positions."""

    def __init__(self, hidden: int = 32, max_length: int = 64):
        self.embed = nn.Embedding(VOCAB, hidden)
        self.position = nn.Embedding(max_length, hidden)
        self.transformer = nn.Transformer(hidden, 4, 1, 1, 2 * hidden, dropout=0.0,
                                          batch_first=True)
        self.out = nn.Linear(hidden, VOCAB)

    def forward(self, source: ta.Tensor, decoder_in: ta.Tensor,
                source_embedded: Optional[ta.Tensor] = None) -> ta.Tensor:
        length = source.shape[1]
        positions = self.position(ta.arange(length))      # (L, H)
        if source_embedded is None:
            source_embedded = self.embed(source)
        mask = nn.Transformer.generate_square_subsequent_mask(decoder_in.shape[1])
        hidden = self.transformer(source_embedded + positions,
                                  self.embed(decoder_in) + positions, tgt_mask=mask)
        return self.out(hidden)                           # (B, L, V)


def build(name: str, hidden: int) -> nn.Module:
    kinds = {"no attention": None, "Bahdanau": "bahdanau", "Luong dot": "dot",
             "Luong general": "general"}
    return TransformerSeq2Seq(hidden) if name == "transformer" else Seq2Seq(hidden,
                                                                            kinds[name])


def train(model: nn.Module, length: int, steps: int, rng: np.random.Generator,
          batch: int = 64, lr: float = 3e-3, progress: Optional[str] = None) -> float:
    """Adam on fresh batches; with ``progress`` (a label) prints the loss every quarter."""
    optimizer = ta.optim.Adam(model.parameters(), lr=lr)
    loss = None
    every = max(1, steps // 4)
    for step in range(1, steps + 1):
        source, decoder_in, target = make_batch(rng, batch, length)
        logits = model(source, decoder_in)                # (B, L, V)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        ta.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if progress is not None and step % every == 0 and step < steps:
            print(f"{progress}  step {step}/{steps}  loss {loss.item():.3f}", flush=True)
    return float(loss.item()) if loss is not None else float("nan")


def accuracy(model: nn.Module, length: int, rng: np.random.Generator,
             batch: int = 256) -> float:
    source, decoder_in, target = make_batch(rng, batch, length)
    with ta.no_grad():
        predicted = model(source, decoder_in).argmax(dim=-1)
    return float((predicted.numpy() == target.numpy()).mean())


def gradient_reach(model: nn.Module, length: int, rng: np.random.Generator,
                   batch: int = 64) -> np.ndarray:
    """|d loss_last / d embedding of source position t|, averaged over the batch, (L,)."""
    source, decoder_in, target = make_batch(rng, batch, length)
    embedded = model.embed(source).detach().requires_grad_(True)   # (B, L, H), a leaf
    logits = model(source, decoder_in, source_embedded=embedded)
    loss = F.cross_entropy(logits[:, -1], target[:, -1])          # the last target token
    loss.backward()
    return np.linalg.norm(embedded.grad.numpy(), axis=-1).mean(axis=0)


def alignment(model: "Seq2Seq", length: int, seed: int):
    """The Bahdanau model's attention weights on one held-out sequence: (L target, L source),
    and that source."""
    source, decoder_in, _ = make_batch(np.random.default_rng(seed), 1, length)
    weights = []
    with ta.no_grad():
        memory, h_n = model.encode(model.embed(source))
        state, target_embedded = h_n[0], model.embed(decoder_in)
        for t in range(decoder_in.shape[1]):
            context = model.attention(state.unsqueeze(1), memory, memory)
            weights.append(model.attention.attention_weights.numpy()[0, 0])
            state = model.decoder_cell(ta.cat([target_embedded[:, t], context[:, 0]],
                                              dim=-1), state)
    return np.stack(weights), source.numpy()[0]


def save_results(results: Dict[str, object], path: str) -> None:
    """The record the pictures are drawn from, as JSON (written again after every model)."""
    def plain(value):
        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, dict):
            return {key: plain(item) for key, item in value.items()}
        return value
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(plain(results), handle, indent=1)
    os.replace(path + ".tmp", path)                       # never a half-written record


def load_results(path: str) -> Dict[str, object]:
    with open(path, encoding="utf-8") as handle:
        results = json.load(handle)
    for key in ("reach", "reach_untrained"):
        results[key] = {name: np.asarray(v) for name, v in results.get(key, {}).items()}
    if "alignment" in results:
        results["alignment"] = np.asarray(results["alignment"])
    return results


def run(lengths: Sequence[int], steps: int, hidden: int = 32, seed: int = 0,
        models: Sequence[str] = MODELS, record: Optional[str] = None,
        settings: Optional[Dict[str, object]] = None) -> Dict[str, object]:
    """Train each model at each length (a fresh model per length), measure; with ``record``
    (a JSON path) the results so far are written after each model and length, so an
    interrupted run keeps what it finished."""
    results: Dict[str, object] = {"lengths": list(lengths), "steps": steps, "hidden": hidden,
                                  "seed": seed, "settings": dict(settings or {}),
                                  "accuracy": {}, "seconds": {}, "reach": {},
                                  "reach_untrained": {}}
    started_all = time.perf_counter()
    for name in models:
        results["accuracy"][name], results["seconds"][name] = [], []
        model = None
        for length in lengths:
            ta.manual_seed(seed)
            rng = np.random.default_rng(seed)
            model = build(name, hidden)
            started = time.perf_counter()
            loss = train(model, length, steps, rng, progress=f"{name:>14}  L={length:>3}")
            results["accuracy"][name].append(accuracy(model, length,
                                                      np.random.default_rng(seed + 1)))
            results["seconds"][name].append(round(time.perf_counter() - started, 2))
            print(f"{name:>14}  L={length:>3}  loss {loss:.3f}  held-out accuracy "
                  f"{results['accuracy'][name][-1]:.3f}  ({results['seconds'][name][-1]:.1f} s,"
                  f" {time.perf_counter() - started_all:.0f} s in all)", flush=True)
            if record:
                save_results(results, record)
        results["reach"][name] = gradient_reach(model, lengths[-1],
                                                np.random.default_rng(seed + 2))
        ta.manual_seed(seed)                              # the same model as initialised
        results["reach_untrained"][name] = gradient_reach(
            build(name, hidden), lengths[-1], np.random.default_rng(seed + 2))
        if name == "Bahdanau":
            results["alignment"], results["alignment_source"] = alignment(
                model, lengths[-1], seed + 3)
        if record:
            save_results(results, record)
    return results


def plot(results: Dict[str, object], out_dir: str) -> List[str]:
    import matplotlib                                      # noqa: PLC0415 - optional extra
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt                        # noqa: PLC0415
    os.makedirs(out_dir, exist_ok=True)
    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in results["accuracy"].items():   # an interrupted run: fewer values
        ax.plot(results["lengths"][:len(values)], values, marker="o", label=name)
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("held-out token accuracy")
    ax.set_title("Reversing digit sequences: accuracy against length")
    ax.set_ylim(0, 1.02)
    ax.legend()
    written.append(os.path.join(out_dir, "accuracy_vs_length.png"))
    fig.tight_layout()
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    panels = (("reach_untrained", "as initialised"), ("reach", "trained"))
    for ax, (key, label) in zip(axes, panels):
        for name, reach in results.get(key, {}).items():
            reach = np.asarray(reach, dtype=float)
            ax.semilogy(np.arange(len(reach)), np.where(reach > 0, reach, np.nan),
                        marker=".", label=name)
        ax.set_title(f"{label}, L = {results['lengths'][-1]}", fontsize=10)
        ax.set_xlabel("source position t (the last target token needs t = 0)")
    axes[0].set_ylabel("|gradient| at the embedding of position t")
    axes[1].legend(fontsize=8)
    fig.suptitle("Gradient from the loss on the last target token back to each source "
                 "position", fontsize=11)
    written.append(os.path.join(out_dir, "gradient_reach.png"))
    fig.tight_layout()
    fig.savefig(written[-1], dpi=110)
    plt.close(fig)
    if "alignment" in results:
        fig, ax = plt.subplots(figsize=(5, 4.5))
        image = ax.imshow(results["alignment"], cmap="viridis", vmin=0, vmax=1)
        ax.set_xlabel("source position")
        ax.set_ylabel("target step")
        ax.set_title("Bahdanau attention weights (trained):\nreversal is the anti-diagonal",
                     fontsize=10)
        fig.colorbar(image, ax=ax)
        written.append(os.path.join(out_dir, "alignment.png"))
        fig.tight_layout()
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[4, 8, 12])
    parser.add_argument("--steps", type=int, default=150, help="training steps per model")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="2 lengths, 5 steps: a smoke run")
    parser.add_argument("--out-dir", default=os.path.join("runs", "rnn_to_attention"))
    parser.add_argument("--plot-only", metavar="RESULTS_JSON",
                        help="draw the pictures from a recorded results.json, train nothing")
    args = parser.parse_args(argv)
    record = os.path.join(args.out_dir, "results.json")
    if args.plot_only:
        results = load_results(args.plot_only)
    else:
        lengths, steps = ([3, 5], 5) if args.quick else (args.lengths, args.steps)
        print(f"training {len(MODELS)} models x lengths {lengths}, {steps} steps each; "
              f"results go to {record} as each finishes", flush=True)
        try:
            results = run(lengths, steps, args.hidden, args.seed, record=record,
                          settings={"quick": args.quick})
        except KeyboardInterrupt:
            if not os.path.exists(record):
                print("interrupted before any model finished: nothing to draw")
                return 130
            print(f"interrupted: drawing what {record} holds")
            results = load_results(record)
    print("\ngradient reaching source position 0 / position L-1 (from the last target):")
    for name, reach in results["reach"].items():
        print(f"{name:>14}  {reach[0]:.2e} / {reach[-1]:.2e}")
    try:
        written = plot(results, args.out_dir)
    except ImportError:
        print('matplotlib is not installed, so no plots: pip install "tinyattn[viz]"')
        return 0
    print("wrote " + ", ".join(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
