"""Make the explorer screenshots in docs/see_it.md, with the tooling the browser tests use
(Playwright driving the system's headless Chromium).

    PYTHONPATH=. python docs/explorer/screenshots.py            # writes docs/explorer/*.png
    PYTHONPATH=. python docs/explorer/screenshots.py --out DIR  # elsewhere (the tests do)
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from tinyattn.train.explore_cli import example_graph
from tinyattn.viz import explore

HERE = os.path.dirname(os.path.abspath(__file__))
SHOTS = ("attention_forward.png", "attention_step.png", "gpt_collapsed.png")


def make(out: str) -> list:
    from playwright.sync_api import sync_playwright          # noqa: PLC0415 - optional
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    written = []
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])

        def page_of(example, **kw):
            loss, params, title = example_graph(example, quick=True)
            path = explore(loss, os.path.join(folder, f"{example}.html"), params=params,
                           title=title)
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.goto("file://" + path)
            page.wait_for_selector("body[data-ready=true]")
            return page

        def shot(page, name):
            page.screenshot(path=os.path.join(out, name))
            written.append(name)

        page = page_of("attention")
        page.evaluate("tinyattnExplorer.select(tinyattnExplorer.data.nodes.find("
                      "n => n.op === 'Softmax').id)")
        shot(page, SHOTS[0])
        for _ in range(4):                       # Sum, Pow, MatMul (A V), then Softmax
            page.click("#step")
        shot(page, SHOTS[1])
        page = page_of("gpt")
        page.evaluate("tinyattnExplorer.collapseAll()")
        page.locator('g.group[data-module="blocks.0"]').click()
        shot(page, SHOTS[2])
        browser.close()
    return written


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=HERE)
    print("wrote", ", ".join(make(parser.parse_args().out)))
    sys.exit(0)
