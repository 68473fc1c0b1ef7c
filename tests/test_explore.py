"""The graph explorer (tinyattn.viz.explore, ``python -m tinyattn explore``): the embedded
graph data against the engine itself, the page's self-containment, the command's refusals,
and the page driven in a real browser (headless Chromium through Playwright; those tests
skip with a reason when either is missing: .ci/run installs both)."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn
from tinyattn.train.explore_cli import EXAMPLES, example_graph
from tinyattn.viz import explore, graph_data, trace_backward

GRAPH_RE = re.compile(r'<script type="application/json" id="tinyattn-graph">(.*?)</script>',
                      re.S)


def read_graph(path):
    with open(path, encoding="utf-8") as f:
        return json.loads(GRAPH_RE.search(f.read()).group(1))


def two_ops():
    x = ta.tensor([1.0, 2.0, 3.0], dtype="float64", requires_grad=True)
    w = ta.tensor([0.5, -1.0, 2.0], dtype="float64", requires_grad=True)
    return x, w, (x * w + x).sum()


# ------------------------------------------------------------------ the data
def test_every_node_has_the_documented_fields_and_edges_join_known_nodes():
    _, _, loss = two_ops()
    data = graph_data(loss)
    fields = {"id", "kind", "op", "name", "module", "shape", "dtype", "value_summary",
              "grad_summary"}
    ids = {n["id"] for n in data["nodes"]}
    for node in data["nodes"]:
        assert fields <= set(node), node
        assert node["kind"] in ("tensor", "function")
    assert all(a in ids and b in ids for a, b in data["edges"])
    functions = [n for n in data["nodes"] if n["kind"] == "function"]
    assert [n["op"] for n in functions] == ["Mul", "Add", "Sum"]
    # tensor -> function -> tensor, every function has exactly one output edge
    for fn in functions:
        assert sum(1 for a, b in data["edges"] if a == fn["id"]) == 1


def test_backward_order_is_the_engines_own_order():
    ta.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    loss = model(ta.randn(3, 4)).pow(2).mean()
    data = graph_data(loss, params=model)
    names = {n["id"]: n["name"] for n in data["nodes"]}
    with trace_backward(echo=False) as trace:
        loss.backward()
    engine_ops = [label.split("#")[0] for label in trace.ops()]
    page_ops = [names[i].split("#")[0] for i in data["backward_order"]]
    assert page_ops == engine_ops
    assert len(data["backward_order"]) == sum(n["kind"] == "function" for n in data["nodes"])


def test_the_gradients_shown_are_the_ones_backward_gives_and_no_grad_is_touched():
    x, w, loss = two_ops()
    data = graph_data(loss, params={"x": x, "w": w})
    assert x.grad is None and w.grad is None           # the page's backward leaves .grad alone
    loss.backward()
    by_name = {n["name"]: n for n in data["nodes"]}
    for name, t in (("x", x), ("w", w)):
        g = t.grad.numpy()
        summary = by_name[name]["grad_summary"]
        assert summary["norm"] == pytest.approx(float(np.linalg.norm(g)))
        assert summary["min"] == pytest.approx(g.min()) and summary["max"] == pytest.approx(g.max())
        assert by_name[name]["grad_values"]["values"] == pytest.approx(list(g))
    # negative control: the gradients differ between x (w + 1) and w (x)
    assert by_name["x"]["grad_summary"]["norm"] != by_name["w"]["grad_summary"]["norm"]


def test_a_tensor_used_twice_is_marked_as_a_sum_of_two_arrivals():
    x, w, loss = two_ops()
    data = graph_data(loss, params={"x": x, "w": w})
    by_name = {n["name"]: n for n in data["nodes"]}
    assert by_name["x"]["uses"] == 2 and by_name["w"]["uses"] == 1
    arrivals = [s["to"] for step in data["backward_steps"] for s in step["sends"]
                if s["grad_summary"] is not None]
    assert arrivals.count(by_name["x"]["id"]) == 2


def test_ops_are_grouped_by_the_module_path_that_made_them():
    loss, model, _ = example_graph("gpt", quick=True)
    data = graph_data(loss, params=model)
    attention_ops = {n["op"] for n in data["nodes"]
                     if n["kind"] == "function" and n["module"] == "blocks.0.attn"}
    assert {"Softmax", "Matmul", "MaskedFill"} <= attention_ops   # composed: opens to its parts
    modules = {n["module"] for n in data["nodes"]}
    assert {"tok_emb", "blocks.0.attn.q_proj", "blocks.0.mlp.linear1", "ln_f"} <= modules
    params = {n["name"]: n["module"] for n in data["nodes"] if n["op"] == "parameter"}
    assert params["blocks.0.attn.q_proj.weight"] == "blocks.0.attn.q_proj"


def test_functions_carry_their_backward_formula_and_derivation_link():
    _, _, loss = two_ops()
    fns = {n["op"]: n for n in graph_data(loss)["nodes"] if n["kind"] == "function"}
    assert fns["Mul"]["formula"] and fns["Mul"]["derivation"].startswith("docs/")
    q, k, v = (ta.randn(1, 2, 3, dtype="float64", requires_grad=True) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v)
    attention = [n for n in graph_data(out.sum())["nodes"] if n["kind"] == "function"][0]
    assert "Backward" in attention["formula"] and attention["derivation"] == \
        "docs/derivations.md#attention"


def test_a_freed_graph_still_draws_and_says_why_there_is_no_stepper():
    x, w, loss = two_ops()
    loss.backward()
    data = graph_data(loss, params={"x": x, "w": w})
    assert data["backward_order"] == [] and "retain_graph" in data["backward_note"]
    x_node = next(n for n in data["nodes"] if n["name"] == "x")
    assert x_node["grad_summary"]["norm"] == pytest.approx(float(np.linalg.norm(x.grad.numpy())))


def test_a_graph_without_gradients_and_a_leaf_alone():
    t = ta.ones(2, 2) * 3                               # nothing requires grad: no graph
    data = graph_data(t)
    assert [n["kind"] for n in data["nodes"]] == ["tensor"] and data["backward_order"] == []
    with pytest.raises(TypeError, match="tinyattn Tensor"):
        graph_data(np.ones(3))


def test_nan_and_inf_become_json_null_not_invalid_json(tmp_path):
    x = ta.tensor([1.0, float("inf"), float("nan")], requires_grad=True)
    path = explore((x * 2).sum(), str(tmp_path / "g.html"))
    text = GRAPH_RE.search(open(path, encoding="utf-8").read()).group(1)

    def refuse(token):
        raise AssertionError(f"{token} is not JSON: browsers' JSON.parse rejects it")
    data = json.loads(text, parse_constant=refuse)
    x_node = next(n for n in data["nodes"] if n["op"] == "leaf")
    assert x_node["value_summary"]["nonfinite"] == 2


# ------------------------------------------------------------------ the page
def test_the_page_is_one_self_contained_file(tmp_path):
    _, _, loss = two_ops()
    path = explore(loss, str(tmp_path / "g.html"), title="two </script> ops")
    text = open(path, encoding="utf-8").read()
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    assert not re.search(r"""(src|href)=["']https?:""", text)
    assert "two &lt;/script&gt; ops" in text                     # the title is escaped
    assert read_graph(path)["title"] == "two </script> ops"
    assert not os.path.exists(path + ".partial")


def test_explore_refuses_a_path_that_is_not_a_page_or_has_no_folder(tmp_path):
    _, _, loss = two_ops()
    with pytest.raises(ValueError, match=r"\.html"):
        explore(loss, str(tmp_path / "notes.md"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        explore(loss, str(tmp_path / "missing" / "g.html"))


def _cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(ta.__file__)), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "tinyattn", "explore", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


def test_the_command_writes_each_example_and_refuses_to_overwrite_other_files(tmp_path):
    for example in ("attention", "mlp"):
        result = _cli("--example", example, "--out", f"{example}.html", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert read_graph(tmp_path / f"{example}.html")["backward_order"]
    notes = tmp_path / "notes.html"
    notes.write_text("my notes")
    result = _cli("--example", "mlp", "--out", "notes.html", cwd=tmp_path)
    assert result.returncode == 2 and "--force" in result.stderr
    assert notes.read_text() == "my notes"
    result = _cli("--example", "mlp", "--out", "g.png", cwd=tmp_path)
    assert result.returncode == 2 and ".html" in result.stderr


# ------------------------------------------------------------------ in a browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api",
                                     reason="playwright is not installed (pip install "
                                            "playwright); .ci/run installs it")
    if CHROMIUM is None:
        pytest.skip("no Chromium (apt-get install chromium); .ci/run installs it")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def open_page(browser, path):
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto("file://" + os.path.abspath(path))
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    return page, errors


@pytest.mark.parametrize("example", ["attention", "mlp", "gpt"])
def test_in_the_browser_every_node_renders_clicks_show_details_and_steps_follow_the_engine(
        browser, tmp_path, example):
    loss, params, title = example_graph(example, quick=True)
    path = explore(loss, str(tmp_path / "g.html"), params=params, title=title)
    data = read_graph(path)
    page, errors = open_page(browser, path)
    page.evaluate("tinyattnExplorer.expandAll()")
    rendered = page.evaluate("tinyattnExplorer.renderedNodeIds()")
    assert sorted(rendered) == sorted(n["id"] for n in data["nodes"])
    assert page.locator("g.node").count() == len(data["nodes"])
    # click a tensor that has a gradient: its shape and gradient show in the panel
    node = next(n for n in data["nodes"] if n["kind"] == "tensor" and n["grad_summary"])
    page.evaluate(f"tinyattnExplorer.center('{node['id']}')")      # as a user pans to it
    page.locator(f'g.node[data-node-id="{node["id"]}"]').click()
    panel = page.inner_text("#details")
    assert "(" + ", ".join(map(str, node["shape"])) in panel and "gradient" in panel
    # the stepper visits backward_order, in order, with the step button
    visited = []
    for _ in data["backward_order"]:
        page.click("#step")
        visited.append(page.evaluate("tinyattnExplorer.currentFunction()"))
    assert visited == data["backward_order"]
    assert page.inner_text("#step-label") == f"step {len(visited)} / {len(visited)}"
    page.click("#back")
    assert page.evaluate("tinyattnExplorer.currentFunction()") == visited[-2]
    assert errors == []
    page.close()


def test_in_the_browser_modules_collapse_and_search_opens_them(browser, tmp_path):
    loss, model, title = example_graph("gpt", quick=True)
    path = explore(loss, str(tmp_path / "g.html"), params=model, title=title)
    page, errors = open_page(browser, path)
    page.evaluate("tinyattnExplorer.collapseAll()")
    groups = page.evaluate("tinyattnExplorer.renderedGroups()")
    assert "blocks.0" in groups and "tok_emb" in groups
    assert page.locator("g.node").count() < len(read_graph(path)["nodes"]) / 4
    page.locator('g.group[data-module="blocks.0"]').click()      # open one block
    assert "blocks.0.attn" in page.evaluate("tinyattnExplorer.renderedGroups()")
    found = page.evaluate("tinyattnExplorer.search('Softmax')")
    assert found and set(found) <= set(page.evaluate("tinyattnExplorer.renderedNodeIds()"))
    assert errors == []
    page.close()


def test_in_the_browser_a_2000_node_training_step_opens(browser, tmp_path):
    """The time itself is a benchmark (benchmarks/explorer_open.py, docs/benchmarks.md): here
    only a bound that catches a layout gone quadratic, whatever the machine's load."""
    ta.manual_seed(0)
    config = nn.GPTConfig(vocab_size=12, block_size=12, n_layer=30, n_head=2, d_model=16,
                          attn_impl="composed")
    model = nn.GPT(config)
    ids = ta.tensor(np.random.default_rng(0).integers(0, 12, (2, 12)))
    _, loss = model(ids, ids)
    path = explore(loss, str(tmp_path / "big.html"), params=model)
    count = len(read_graph(path)["nodes"])
    assert count >= 2000
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    start = time.perf_counter()
    page.goto("file://" + path)
    page.wait_for_selector("body[data-ready=true]", timeout=60_000)
    seconds = time.perf_counter() - start
    print(f"{count} nodes: the page was ready in {seconds:.2f} s")
    assert seconds < 20.0, seconds
    page.close()


def test_the_benchmark_and_the_screenshot_script_still_run(browser, tmp_path):
    """The tools behind docs/see_it.md's figures, at their smallest: an API change breaks
    this test rather than the next person who regenerates the docs."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(ta.__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    bench = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "explorer_open.py"),
                            "--tiny"], capture_output=True, text=True, timeout=300, env=env)
    assert bench.returncode == 0 and "nodes" in bench.stdout, bench.stderr
    shots = subprocess.run([sys.executable, os.path.join(root, "docs", "explorer",
                                                         "screenshots.py"), "--out",
                            str(tmp_path)], capture_output=True, text=True, timeout=300,
                           env=env)
    assert shots.returncode == 0, shots.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["attention_forward.png", "attention_step.png", "gpt_collapsed.png"])


FIREFOX = shutil.which("firefox-esr") or shutil.which("firefox")


def _firefox_screenshot(page_path, png_path, tmp_path):
    profile = tmp_path / "firefox-profile"
    profile.mkdir()
    subprocess.run([FIREFOX, "--headless", "--no-remote", "--profile", str(profile),
                    "--window-size", "1200,800", "--screenshot", str(png_path),
                    "file://" + str(page_path)], capture_output=True, timeout=180)
    image = pytest.importorskip("matplotlib.image").imread(str(png_path))[..., :3]
    function_blue = np.array([0xdb, 0xe8, 0xff]) / 255.0        # .node.function's fill
    return int((np.abs(image - function_blue).max(axis=-1) < 2 / 255).sum())


@pytest.mark.skipif(FIREFOX is None, reason="no Firefox (apt-get install firefox-esr); "
                                            ".ci/run installs it")
def test_in_firefox_the_page_draws_its_graph_offline(tmp_path):
    """Firefox, headless, takes a screenshot of the page: the blue of the Function boxes is
    there only if the script parsed the graph and drew it. The negative control, the same
    page with its graph data broken, draws nothing."""
    loss, params, title = example_graph("attention")
    page = tmp_path / "g.html"
    explore(loss, str(page), params=params, title=title)
    assert _firefox_screenshot(page, tmp_path / "ok.png", tmp_path) > 2000
    broken = tmp_path / "broken.html"
    broken.write_text(page.read_text(encoding="utf-8").replace(
        'id="tinyattn-graph">{', 'id="tinyattn-graph">{oops', 1), encoding="utf-8")
    shutil.rmtree(tmp_path / "firefox-profile")
    assert _firefox_screenshot(broken, tmp_path / "broken.png", tmp_path) == 0


def test_every_graph_opens_collapsed_by_module_with_the_stepper_first(tmp_path):
    """The toy GPT's page (about 150 nodes) used to open fully expanded, a cloud of tiny
    boxes: now every graph opens collapsed by module, and the backward stepper is the first
    thing in the bar."""
    loss, model, title = example_graph("gpt", quick=True)
    page = pathlib.Path(explore(loss, str(tmp_path / "g.html"), params=model, title=title))
    text = page.read_text(encoding="utf-8")
    assert text.index('class="stepper"') < text.index('id="title"') < text.index('id="search"')
    assert "const expanded = new Set();" in text
    assert "nodes.length <=" not in text                  # no size threshold left


def test_every_node_is_named_never_a_bare_input_number():
    import re
    for example in EXAMPLES:
        loss, params, title = example_graph(example, quick=True)
        names = [n["name"] for n in graph_data(loss, params, title)["nodes"]]
        assert all(n and not re.fullmatch(r"(input|leaf|intermediate) ?\d*", n)
                   for n in names), names
    a = ta.tensor([1.0, 2.0], requires_grad=True)
    loss = F.cross_entropy(a.reshape(1, 2) * 0.5, ta.tensor(np.array([1])))
    names = {n["name"] for n in graph_data(loss)["nodes"] if n["kind"] == "tensor"}
    assert "constant 0.5" in names and any(n.startswith("targets for CrossEntropy")
                                           for n in names), names


def test_the_command_writes_under_runs_explore_by_default_not_the_working_folder(tmp_path):
    result = _cli("--example", "mlp", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "runs" / "explore" / "mlp.html").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
    root = pathlib.Path(__file__).resolve().parent.parent
    assert "runs/" in (root / ".gitignore").read_text().splitlines()
