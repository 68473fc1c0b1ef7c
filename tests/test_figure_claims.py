"""Every figure in docs/figures/ against an independent computation of what its caption
claims. The figures are drawn by docs/make_figures.py's own functions (into a temporary
folder); what they draw is read from matplotlib's artists (box texts, image arrays), and
the claim is recomputed here from scratch. Figures whose claims are checked elsewhere are
listed in CHECKED_ELSEWHERE with the test that does it; a new figure with neither fails."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytest.importorskip("matplotlib")

CHECKED_ELSEWHERE = {
    "positional_rope.png": "test_plots.py::test_rope_shows_the_angle_and_the_relative_score_"
                           "curve_not_a_similarity (the curve against RoPE's own op)",
    "positional_alibi.png": "test_plots.py::test_alibi_axis_says_head_and_each_head_has_its_"
                            "bias_line (each line against -slope * distance)",
    "positional.png": "test_plots.py::test_additive_encodings_show_their_table_and_position_"
                      "similarity; test_learning_path.py (the diagonal's caption)",
    "attention.png": "notebook_claims.py, 08 (the anti-diagonal, recomputed from the saved "
                     "model); test_pictures_unmistakable.py (grey masked cells, scored rows)",
    "attention_evolution.png": "test_pictures_unmistakable.py::test_frames_sit_where_the_"
                               "attention_changes; test_plots.py (each block is the map)",
    "attention_evolution.gif": "test_plots.py::test_attention_history_records_the_model_at_"
                               "each_planned_step (one frame per chosen step)",
    "ddp_timeline.png": "test_figure_records.py::test_ddp_record_shows_all_reduce_overlapping_"
                        "the_backward (from the run's record docs/results/ddp_timeline.json)",
    "rnn_alignment.png": "test_figure_records.py::test_alignment_picture_is_anti_diagonal_on_"
                         "reversal (from docs/results/rnn_to_attention.json)",
    "rnn_gradient_reach.png": "test_figure_records.py::test_gradient_reach_fades_without_"
                              "attention_and_not_with_it",
    "rnn_accuracy_vs_length.png": "test_figure_records.py::test_attention_is_at_least_as_"
                                  "accurate_at_the_longest_length",
    "loss.png": "notebook_claims.py, 08 (the loss from ~log(10) to near 0, from the run's "
                "own history)",
}


def _make_figures():
    spec = importlib.util.spec_from_file_location("make_figures",
                                                  ROOT / "docs" / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def drawn(tmp_path, monkeypatch):
    """Run a make_figures function; return every Figure it made (kept as it was made)."""
    import matplotlib
    import matplotlib.figure
    matplotlib.use("Agg")
    made = []
    init = matplotlib.figure.Figure.__init__

    def keep(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)
    monkeypatch.setattr(matplotlib.figure.Figure, "__init__", keep)
    module = _make_figures()
    return lambda name: (getattr(module, name)(str(tmp_path), True), made)[1]


def _texts(figure):
    return [t.get_text() for ax in figure.axes for t in ax.texts if t.get_text()]


def test_graph_values_boxes_hold_the_chain_rules_gradients(drawn):
    """Caption: every box shows its value and gradient; dL/da = b * f = 6."""
    texts = _texts(drawn("graph_values")[0])
    a, b, c, f = 2.0, -3.0, 10.0, -2.0
    want = {"a": (a, b * f), "b": (b, a * f), "c": (c, f), "f": (f, a * b + c),
            "e": (a * b, f), "d": (a * b + c, f), "L": ((a * b + c) * f, 1.0)}
    for name, (value, grad) in want.items():
        box = [t for t in texts if t.split("\n")[0].split(" ")[0] == name]
        assert box and f"data {value:g}" in box[0] and f"grad {grad:g}" in box[0], box
    assert want["a"][1] == 6.0


def test_graph_attention_mask_hid_the_causal_future(drawn):
    """Caption: the mask hid 3 of the 9 scores (the future of a 3-token causal attention)."""
    texts = " ".join(_texts(drawn("graph_attention")[0]))
    future = int(np.triu(np.ones((3, 3)), k=1).sum())       # j > i: 3 of 9
    assert future == 3 and f"{future} of 9" in texts, texts
    assert "softmax" in texts.lower()


def test_graph_gpt_says_how_many_earlier_ops_it_left_out(drawn):
    """Caption: the dashed box stands for the earlier ops left out by max_depth=14."""
    figure = drawn("graph_gpt")[0]
    texts = _texts(figure)
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, d_model=16))
    ids = np.arange(8)[None, :] % 11
    _, loss = model(ids, ids)
    seen, frontier = {id(loss._ctx): loss._ctx}, [loss._ctx]   # every op behind the loss
    while frontier:
        for parent in frontier.pop().parents:
            if parent is not None and id(parent) not in seen:
                seen[id(parent)] = parent
                frontier.append(parent)
    op_names = {type(fn).__name__ for fn in seen.values()}
    boxes = [t.split("\n")[0].split(" ")[-1] for t in texts]
    shown = sum(name in op_names for name in boxes)          # op boxes drawn
    hidden = len(seen) - shown
    assert 0 < shown < len(seen)
    cut = [t for t in texts if "earlier ops" in t]
    assert len(cut) == 1 and f" {hidden} earlier ops" in cut[0], (hidden, cut)
    caption = (ROOT / "docs" / "see_it.md").read_text().split("figures/graph_gpt.png)", 1)[1]
    assert f"the {hidden}\nearlier ops" in caption or f"the {hidden} earlier ops" in \
        caption.replace("\n", " "), caption[:300]


def test_tiled_blocks_skips_the_tiles_above_the_diagonal(drawn):
    """Title: 6 of 16 tiles are never computed; computed cells are j <= i."""
    figure = drawn("tiled_blocks")[0]
    image = np.ma.getdata(figure.axes[0].get_images()[0].get_array())
    size, block = image.shape[0], 4
    tiles = [(r, c) for r in range(0, size, block) for c in range(0, size, block)]
    skipped = [(r, c) for r, c in tiles if c > r + block - 1]
    for r, c in skipped:
        assert (image[r:r + block, c:c + block] == 0).all()
    i, j = np.indices(image.shape)
    drawn_tiles = image > 0
    assert ((image == 2) == (drawn_tiles & (j <= i))).all()
    title = figure.axes[0].get_title()
    assert f"{len(skipped)} of {len(tiles)} tiles are never computed" in title
    assert (len(skipped), len(tiles)) == (6, 16)


def test_every_figure_has_a_claim_test():
    module = _make_figures()
    here = {"graph_values.png", "graph_attention.png", "graph_gpt.png", "tiled_blocks.png"}
    for name in module.expected_files():
        assert name in here or name in CHECKED_ELSEWHERE, f"{name}: no test of its claim"
    for name, where in CHECKED_ELSEWHERE.items():
        test_file = ROOT / "tests" / where.split("::")[0].split(",")[0].split(" ")[0]
        assert test_file.is_file(), where
