"""``python -m tinyattn explore``: write the graph explorer page (tinyattn.viz.explore) for
one of three computations, so a learner can click through a backward without writing code.

    python -m tinyattn explore                      # runs/explore/gpt.html: the toy GPT
    python -m tinyattn explore --example attention  # softmax(q k^T / sqrt(d_k)) v, step by step
    python -m tinyattn explore --example mlp --out mlp.html

Without --out the page goes to runs/explore/<example>.html (runs/ is where training runs
write too, and it is in .gitignore), never into the folder you happen to be in.

The attention inside each example is computed from separate ops (``attn_impl="composed"``)
so the page shows its matmuls, scale, mask and softmax instead of one fused box.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, List, Optional, Tuple

import numpy as np

from .. import functional as F
from .. import nn
from ..backend import manual_seed
from ..factories import randn
from ..tensor import Tensor, as_tensor
from ..viz import explore
from .tasks import make_task

__all__ = ["main", "example_graph", "EXAMPLES"]

EXAMPLES = ("gpt", "attention", "mlp")


def _attention() -> Tuple[Tensor, Any, str]:
    """Causal self-attention of 2 heads over 4 tokens, from its parts."""
    q, k, v = (randn(1, 2, 4, 3, dtype="float64", requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True, impl="composed")
    loss = (out ** 2).sum()
    return loss, {"q": q, "k": k, "v": v}, "causal attention, (B, h, S, d_k) = (1, 2, 4, 3)"


def _mlp() -> Tuple[Tensor, Any, str]:
    """A two-layer MLP and its mean squared error on 8 points."""
    model = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.Linear(8, 1))
    x, y = randn(8, 3), randn(8, 1)
    loss = F.mse_loss(model(x), y)
    return loss, model, "MLP 3 -> 8 -> 1, mean squared error"


def _gpt(quick: bool) -> Tuple[Tensor, Any, str]:
    """One training step's loss of the toy model (the reverse task), as `train` builds it."""
    task = make_task("reverse")
    batch = 4 if quick else 16
    x, y = task.sample(np.random.default_rng(0), batch)
    config = nn.GPTConfig(vocab_size=len(task.vocab), block_size=task.block_size,
                          n_layer=1 if quick else 2, n_head=4, d_model=32 if quick else 64,
                          attn_impl="composed")
    model = nn.GPT(config)
    _, loss = model(as_tensor(x), targets=as_tensor(y))
    return loss, model, (f"toy GPT ({config.n_layer} layers, d_model {config.d_model}), one "
                         f"training step on the reverse task, batch {batch}")


def example_graph(name: str, quick: bool = False) -> Tuple[Tensor, Any, str]:
    """(loss, params, title) of a named example: one of EXAMPLES."""
    manual_seed(0)
    if name == "attention":
        return _attention()
    if name == "mlp":
        return _mlp()
    if name == "gpt":
        return _gpt(quick)
    raise ValueError(f"unknown example {name!r}; choose one of {', '.join(EXAMPLES)}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tinyattn explore",
        description="Write one self-contained HTML page (opens offline) showing a computation "
                    "graph, its values and gradients, and a stepper that replays the backward "
                    "pass in the engine's order. See docs/see_it.md.")
    parser.add_argument("--example", choices=EXAMPLES, default="gpt",
                        help="what to compute (default: one training step of the toy GPT)")
    parser.add_argument("--out", default=None,
                        help="the page to write (.html); default runs/explore/<example>.html")
    parser.add_argument("--quick", action="store_true",
                        help="a smaller model (for a first look and for the tests)")
    parser.add_argument("--force", action="store_true",
                        help="overwrite --out even if it is not a page this command wrote")
    args = parser.parse_args(argv)
    out = args.out
    if out is None:
        out = os.path.join("runs", "explore", f"{args.example}.html")
        os.makedirs(os.path.dirname(out), exist_ok=True)
    if not out.endswith((".html", ".htm")):
        parser.error(f"--out must end in .html, got {out!r}")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        parser.error(f"--out: the folder {folder!r} does not exist")
    if os.path.exists(out) and not args.force and not _is_our_page(out):
        parser.error(f"--out {out!r} exists and is not an explorer page; choose another name "
                     f"or pass --force to overwrite it")
    loss, params, title = example_graph(args.example, quick=args.quick)
    explore(loss, out, params=params, title=title)
    print(f"wrote {out}: open it in a browser (it works offline)")
    return 0


def _is_our_page(path: str) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return 'id="tinyattn-graph"' in f.read()
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
