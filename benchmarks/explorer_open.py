"""How long the graph explorer's page takes to open in headless Chromium.

    PYTHONPATH=. python benchmarks/explorer_open.py            # a 30-layer toy GPT step
    PYTHONPATH=. python benchmarks/explorer_open.py --tiny     # 2 layers (the smoke test)

The graph is one training step's loss of a toy GPT (d_model 16, 2 heads, attention
composed from its ops, so every matmul, mask and softmax is a node): 30 layers give about
2,000 nodes. Timed: from ``page.goto`` of the file to the page marking itself ready
(graph parsed, laid out collapsed by module and drawn), the median of ``--reps`` fresh
pages. Needs playwright and a Chromium (``apt-get install chromium``).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

import tinyattn as ta
from tinyattn import nn
from tinyattn.viz import explore

__all__ = ["main", "gpt_step_page"]


def gpt_step_page(path: str, layers: int) -> int:
    """Write the page of a ``layers``-layer toy GPT training step; return its node count."""
    ta.manual_seed(0)
    config = nn.GPTConfig(vocab_size=12, block_size=12, n_layer=layers, n_head=2,
                          d_model=16, attn_impl="composed")
    model = nn.GPT(config)
    ids = ta.tensor(np.random.default_rng(0).integers(0, 12, (2, 12)))
    _, loss = model(ids, ids)
    explore(loss, path, params=model, title=f"{layers}-layer toy GPT step")
    return len(json.loads(open(path, encoding="utf-8").read().split(
        'id="tinyattn-graph">', 1)[1].split("</script>", 1)[0])["nodes"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=30)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="2 layers, 1 rep (smoke test)")
    args = parser.parse_args(argv)
    layers, reps = (2, 1) if args.tiny else (args.layers, args.reps)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped: playwright is not installed (pip install playwright)")
        return 0
    if chromium is None:
        print("skipped: no Chromium (apt-get install chromium)")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "graph.html")
        count = gpt_step_page(path, layers)
        size = os.path.getsize(path)
        times = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            for _ in range(reps):
                page = browser.new_page(viewport={"width": 1200, "height": 800})
                start = time.perf_counter()
                page.goto("file://" + path)
                page.wait_for_selector("body[data-ready=true]", timeout=60_000)
                times.append(time.perf_counter() - start)
                page.close()
            browser.close()
    print(f"{layers} layers: {count} nodes, page {size / 1e6:.1f} MB, ready in "
          f"{statistics.median(times):.2f} s (median of {reps}; all: "
          f"{', '.join(f'{t:.2f}' for t in times)}); load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
