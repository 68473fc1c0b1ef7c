"""Regenerate every picture in docs/figures/ from the tools that make them, and the
executed notebooks in docs/notebooks/.

    python3 docs/make_figures.py                 # both: figures, then every notebook run
    python3 docs/make_figures.py --only figures  # docs/figures/, the default reverse run
    python3 docs/make_figures.py --only notebooks   # docs/notebooks/ (docs/notebook_pages.py)
    python3 docs/make_figures.py --quick --out /tmp/figures    # a tiny run, for the tests

Each figure is shown in the docs with a caption line on what to look for
(tests/test_figures.py checks that every file here is referenced and that this script makes
exactly these files). The training figures come from the default reverse run (seed 0), the
one the README describes, so they are what a learner's first run draws. Needs matplotlib.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from typing import Callable, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))      # this checkout's tinyattn, run from anywhere

import tinyattn as ta  # noqa: E402
import tinyattn.functional as F  # noqa: E402
from tinyattn import nn  # noqa: E402
from tinyattn.train import TrainConfig, train  # noqa: E402
from tinyattn.train.plot_positional import positional_figure  # noqa: E402
from tinyattn.viz import draw_graph  # noqa: E402

RESULTS = os.path.join(HERE, "results")       # the records figures are drawn from
RNN_FIGURES = {"rnn_accuracy_vs_length.png": "accuracy_vs_length.png",
               "rnn_gradient_reach.png": "gradient_reach.png",
               "rnn_alignment.png": "alignment.png"}
TRAINING_FIGURES = ("loss.png", "attention.png", "attention_evolution.png",
                    "attention_evolution.gif", "positional.png")


def _close(fig) -> None:
    import matplotlib.pyplot as plt
    plt.close(fig)


def graph_values(out: str, quick: bool) -> None:
    """micrograd's own example, L = (a * b + c) * f, with data and grad in every box."""
    a, b, c, f = (ta.tensor(v, dtype="float64", requires_grad=True)
                  for v in (2.0, -3.0, 10.0, -2.0))
    e = a * b
    d = e + c
    loss = d * f
    for t in (e, d, loss):
        t.retain_grad()                   # intermediates keep .grad too, as in micrograd
    loss.backward()
    fig = draw_graph(loss, os.path.join(out, "graph_values.png"),
                     params={"a": a, "b": b, "c": c, "f": f, "e": e, "d": d, "L": loss},
                     title="L = (a * b + c) * f: data and grad in every box (dL/da = b * f = 6)")
    _close(fig)


def graph_attention(out: str, quick: bool) -> None:
    """One causal attention, its packed op opened into the parts of its forward."""
    ta.manual_seed(0)
    q, k, v = (ta.randn(1, 1, 3, 2, dtype="float64", requires_grad=True) for _ in range(3))
    loss = (F.scaled_dot_product_attention(q, k, v, is_causal=True) ** 2).sum()
    loss.backward(retain_graph=True)      # keeps what the op saved: the mask count, the scale
    fig = draw_graph(loss, os.path.join(out, "graph_attention.png"),
                     params={"q": q, "k": k, "v": v}, expand=True, direction="LR")
    _close(fig)


def graph_gpt(out: str, quick: bool) -> None:
    """A 2-layer GPT's loss, drawn to a depth of 14 ops from the output."""
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16))
    ids = np.arange(8)[None, :] % 11
    _, loss = model(ids, ids)
    loss.backward()
    fig = draw_graph(loss, os.path.join(out, "graph_gpt.png"), params=model, max_depth=14)
    _close(fig)


def positional_kinds(out: str, quick: bool) -> None:
    """RoPE and ALiBi, which a default run does not draw (it uses learned positions)."""
    for kind in ("rope", "alibi"):
        ta.manual_seed(0)
        model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=16, n_layer=1, n_head=4,
                                    d_model=32, pos_encoding=kind))
        fig = positional_figure(model, 16)
        fig.savefig(os.path.join(out, f"positional_{kind}.png"), dpi=110, bbox_inches="tight")
        _close(fig)


def tiled_blocks(out: str, quick: bool) -> None:
    """Which tiles of a causal (S, S) score matrix the tiled attention computes."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    size, block = 16, 4
    kinds = np.zeros((size, size))                  # 0 skipped, 1 masked inside, 2 computed
    skipped = 0
    for r0 in range(0, size, block):
        for c0 in range(0, size, block):
            r1, c1 = r0 + block, c0 + block
            if c0 > r1 - 1:
                skipped += 1
                continue                            # above the diagonal: never touched
            rows, cols = np.meshgrid(np.arange(r0, r1), np.arange(c0, c1), indexing="ij")
            kinds[r0:r1, c0:c1] = np.where(rows >= cols, 2, 1)
    colours = plt.matplotlib.colors.ListedColormap(["#ffffff", "#c8c8c8", "#4c9be8"])
    fig, ax = plt.subplots(figsize=(5.6, 5.2))
    ax.imshow(kinds, cmap=colours, vmin=0, vmax=2, interpolation="nearest")
    for edge in range(0, size + 1, block):
        ax.axhline(edge - 0.5, color="black", linewidth=1.2)
        ax.axvline(edge - 0.5, color="black", linewidth=1.2)
    ax.set_xlabel("key position j (key blocks of block_size = 4)")
    ax.set_ylabel("query position i (query blocks of 4)")
    tiles = (size // block) ** 2
    ax.set_title(f"tiled causal attention, S = {size}, block_size = {block}:\n"
                 f"{skipped} of {tiles} tiles are never computed, forward or backward",
                 fontsize=10)
    ax.legend(handles=[Patch(color="#4c9be8", label="computed (j <= i)"),
                       Patch(color="#c8c8c8", label="masked inside a diagonal tile"),
                       Patch(facecolor="#ffffff", edgecolor="black",
                             label="skipped tile (above the diagonal)")],
              loc="upper right", fontsize=8)
    fig.savefig(os.path.join(out, "tiled_blocks.png"), dpi=110, bbox_inches="tight")
    _close(fig)


def training(out: str, quick: bool) -> None:
    """The default reverse run's pictures (a 12-step toy run with --quick)."""
    with tempfile.TemporaryDirectory() as run:
        if quick:
            config = TrainConfig(steps=12, d_model=16, heads=2, layers=1, batch_size=8,
                                 eval_size=32, eval_every=12, warmup=1, out=run, quiet=True,
                                 overwrite=True)
        else:
            config = TrainConfig(seed=0, out=run, quiet=True, overwrite=True)
        train(config)
        for name in TRAINING_FIGURES:
            shutil.copyfile(os.path.join(run, name), os.path.join(out, name))


def _example(name: str):
    """Import examples/<name>.py (examples/ is not a package)."""
    import importlib.util
    path = os.path.join(os.path.dirname(HERE), "examples", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rnn_to_attention(out: str, quick: bool) -> None:
    """examples/rnn_to_attention.py's default run (a few minutes; --quick: its smoke run);
    the record it draws from goes to docs/results/rnn_to_attention.json (full runs only)."""
    with tempfile.TemporaryDirectory() as run:
        code = _example("rnn_to_attention").main(["--out-dir", run]
                                                 + (["--quick"] if quick else []))
        if code != 0:
            raise RuntimeError(f"examples/rnn_to_attention.py exited with {code}")
        for name, made in RNN_FIGURES.items():
            shutil.copyfile(os.path.join(run, made), os.path.join(out, name))
        if not quick:
            os.makedirs(RESULTS, exist_ok=True)
            shutil.copyfile(os.path.join(run, "results.json"),
                            os.path.join(RESULTS, "rnn_to_attention.json"))


def ddp_timeline(out: str, quick: bool) -> None:
    """A real 2-process DDP run's timeline (docs/measure_distributed.py --timeline-only; needs
    mpi4py and an MPI runtime); its record goes to docs/results/ddp_timeline.json. With
    --quick the picture is drawn again from that record, without starting processes."""
    sys.path.insert(0, HERE)
    import measure_distributed  # noqa: PLC0415 - docs/ is not a package
    record = os.path.join(RESULTS, "ddp_timeline.json")
    if not quick:
        import subprocess
        os.makedirs(RESULTS, exist_ok=True)
        subprocess.run([sys.executable, os.path.join(HERE, "measure_distributed.py"),
                        "--timeline-only", "--record", record], check=True, timeout=1200)
    with open(record, encoding="utf-8") as handle:
        measure_distributed.draw_timeline(json.load(handle),
                                          os.path.join(out, "ddp_timeline.png"))


MAKERS: Dict[str, Callable[[str, bool], None]] = {
    "graph_values.png": graph_values, "graph_attention.png": graph_attention,
    "graph_gpt.png": graph_gpt, "positional_rope.png": positional_kinds,
    "positional_alibi.png": positional_kinds, "tiled_blocks.png": tiled_blocks,
    **{name: training for name in TRAINING_FIGURES},
    **{name: rnn_to_attention for name in RNN_FIGURES},
    "ddp_timeline.png": ddp_timeline,
}


def expected_files() -> List[str]:
    return sorted(MAKERS)


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "figures"))
    parser.add_argument("--quick", action="store_true",
                        help="a 12-step toy run instead of the default 500 steps, figures "
                             "only (tests)")
    parser.add_argument("--only", choices=("figures", "notebooks"), default=None,
                        help="only the figures, or only the executed notebooks (docs/"
                             "notebooks/, about 3 minutes on two cores)")
    parser.add_argument("--figures", nargs="+", metavar="NAME", choices=sorted(MAKERS),
                        help="make only these figures (and those their maker draws too)")
    args = parser.parse_args(argv)
    if args.figures and args.only is None:
        args.only = "figures"
    if args.only != "figures" and not args.quick:
        sys.path.insert(0, HERE)
        import notebook_pages  # noqa: PLC0415 - docs/ is not a package
        pages = notebook_pages.write_pages()
        print(f"wrote {len(pages)} notebook pages to {notebook_pages.PAGES}")
        if args.only == "notebooks":
            return 0
    os.makedirs(args.out, exist_ok=True)
    import matplotlib
    matplotlib.use("Agg")
    done = set()
    chosen = args.figures or expected_files()
    for maker in (MAKERS[name] for name in chosen):
        if maker not in done:
            maker(args.out, args.quick)
            done.add(maker)
    missing = [name for name in chosen
               if not os.path.exists(os.path.join(args.out, name))]
    if missing:
        print(f"error: not written: {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"wrote {len(chosen)} figures to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
