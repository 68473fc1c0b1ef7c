"""The training pictures: positional.png per encoding, readable attention maps, attention
while training. Labels and contents are read from matplotlib's artists, not from pixels."""
import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn, optim
from tinyattn.train import plots
from tinyattn.train.attention_history import (AttentionHistory, attention_maps,
                                              evolution_figure, snapshot_steps)
from tinyattn.train.plot_positional import positional_figure, rope_relative_scores
from tinyattn.train.tasks import make_task

pytest.importorskip("matplotlib")


def _gpt(kind, n_head=4, d_model=32, block_size=16, n_layer=1, vocab=11):
    ta.manual_seed(0)
    return nn.GPT(nn.GPTConfig(vocab_size=vocab, block_size=block_size, n_layer=n_layer,
                               n_head=n_head, d_model=d_model, pos_encoding=kind))


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def _close(fig):
    import matplotlib.pyplot as plt
    plt.close(fig)


def _titles_do_not_overlap(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [fig._suptitle] + [ax.title for ax in fig.axes if ax.get_title()]
    boxes = [t.get_window_extent(renderer) for t in texts]
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (texts[i].get_text(), texts[j].get_text())


def _integer_ticks(axis, low, high):
    ticks = [t for t in axis.get_majorticklocs() if low - 0.5 <= t <= high + 0.5]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


@pytest.mark.parametrize("kind", ["learned", "sinusoidal"])
def test_additive_encodings_show_their_table_and_position_similarity(kind):
    fig = positional_figure(_gpt(kind), 16)
    table, similarity = _panels(fig)
    assert table.get_ylabel() == "position" and "d_model" in table.get_xlabel()
    assert "cosine similarity" in similarity.get_title()
    assert similarity.get_images()[0].get_array().shape == (16, 16)
    _integer_ticks(table.yaxis, 0, 15)
    _integer_ticks(similarity.xaxis, 0, 15)
    _titles_do_not_overlap(fig)
    _close(fig)


def test_rope_shows_the_angle_and_the_relative_score_curve_not_a_similarity():
    model = _gpt("rope")
    fig = positional_figure(model, 16)
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert "cosine similarity" not in titles
    angle, curve = _panels(fig)
    assert angle.get_images()[0].get_array().shape == (16, 32 // 4 // 2)   # (positions, pairs)
    assert "distance" in curve.get_xlabel()
    x, y = curve.lines[0].get_data()
    assert list(x) == list(range(16))
    np.testing.assert_allclose(y, rope_relative_scores(8, 10000.0, np.arange(16)))
    _integer_ticks(angle.yaxis, 0, 15)
    _titles_do_not_overlap(fig)
    _close(fig)


def test_rope_relative_score_matches_the_rope_op_on_all_ones_vectors():
    """The curve is what the library's RoPE does: rotate all-ones q at position m and k at
    position 0, take q . k / d_k; it is the same for any pair m apart."""
    head_dim, length = 8, 12
    rope = nn.RotaryEmbedding(head_dim, base=10000.0)
    ones = ta.ones(1, 1, length, head_dim, dtype="float64")
    rotated = rope(ones).numpy()[0, 0]                          # (S, d_k)
    for shift in (0, 3):
        scores = rotated[shift:] @ rotated[shift]               # query at m + shift, key at shift
        np.testing.assert_allclose(scores / head_dim,
                                   rope_relative_scores(head_dim, 10000.0,
                                                        np.arange(length - shift)), atol=1e-12)
    # negative control: a wrong frequency (base^(-i/d) instead of base^(-2i/d)) differs
    wrong = np.cos(np.outer(np.arange(length), 10000.0 ** (-np.arange(4) / 8))).mean(axis=1)
    assert np.abs(wrong - rotated @ rotated[0] / head_dim).max() > 0.05


def test_alibi_axis_says_head_and_each_head_has_its_bias_line():
    fig = positional_figure(_gpt("alibi"), 16)
    heatmap, lines = _panels(fig)
    assert heatmap.get_xlabel() == "head" and "dimension" not in heatmap.get_xlabel()
    assert "distance" in heatmap.get_ylabel()
    _integer_ticks(heatmap.xaxis, 0, 3)
    slopes = nn.alibi_slopes(4)
    assert len(lines.lines) == 4
    for line, slope in zip(lines.lines, slopes):
        x, y = line.get_data()
        np.testing.assert_allclose(y, -slope * np.asarray(x))
    assert [t.get_text() for t in lines.get_legend().get_texts()][0].startswith("head 0")
    _titles_do_not_overlap(fig)
    _close(fig)


def test_no_positional_encoding_gets_an_explanation():
    fig = positional_figure(_gpt("none"), 16)
    assert "nothing about positions" in fig.axes[0].texts[0].get_text()
    _close(fig)


def test_attention_map_labels_are_visible_and_the_figure_is_capped():
    tokens = list("def f(x):\n    return x")                   # 22 tokens with spaces
    weights = [np.full((4, 22, 22), 1 / 22)] * 2
    fig = plots.attention_figure(weights, tokens, "chars")
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert "\u2423" in labels and "\u21b5" in labels            # space and newline shown
    assert all(label.strip() for label in labels)
    assert fig.get_size_inches()[0] <= 16.0
    colorbar = [ax for ax in fig.axes if ax.get_ylabel() == "attention weight"]
    assert len(colorbar) == 1
    assert "row i" in fig._suptitle.get_text()
    many = plots.attention_figure([np.full((8, 64, 64), 1 / 64)] * 2, ["a"] * 64, "wide")
    assert many.get_size_inches()[0] <= 16.0
    _close(fig)
    _close(many)


def test_chars_example_is_an_excerpt_that_starts_a_word():
    task = make_task("chars")
    inputs, _, _ = task.heldout(64, 0)
    ids = plots.readable_example(task, inputs)
    text = "".join(task.decode(ids))
    assert len(ids) == 24 and text[0].isalpha()
    assert sum(c.isalpha() or c == " " for c in text) >= 0.85 * 24
    digits = make_task("reverse")
    x, _, _ = digits.heldout(4, 0)
    assert np.array_equal(plots.readable_example(digits, x), x[0])


def test_snapshot_steps_start_at_zero_end_at_the_last_step_and_spread_out():
    assert snapshot_steps(500) == [0, 10, 22, 48, 105, 229, 500]
    assert snapshot_steps(1) == [0, 1]
    steps = snapshot_steps(40, count=5)
    assert steps[0] == 0 and steps[-1] == 40 and steps == sorted(set(steps))


def test_attention_history_records_the_model_at_each_planned_step(tmp_path):
    from PIL import Image
    model = _gpt("learned", n_head=2, d_model=16, n_layer=2)
    task = make_task("reverse")
    x, _, _ = task.heldout(4, 0)
    before = attention_maps(model, x[0], "cpu")
    history = AttentionHistory(model, x[0], task.decode(x[0]), "cpu", total_steps=6, count=4)
    assert history.steps == [0, 1, 2, 3, 4, 5, 6] and [s for s, _ in history.snapshots] == [0]
    np.testing.assert_array_equal(history.snapshots[0][1][1], before[1])
    opt = optim.AdamW(model.parameters(), lr=0.05)
    rng = np.random.default_rng(0)
    for step in range(1, 5):                                   # stopped early, at step 4
        bx, by = task.sample(rng, 8)
        _, loss = model(bx, by, ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.after_step(model, step)
    assert [s for s, _ in history.snapshots] == [0, 1, 2, 3, 4]
    written = history.write(str(tmp_path), model, 4, "reverse")
    assert [s for s, _ in history.snapshots] == [0, 1, 2, 3, 4]   # the last state is in
    frames = [s for s, _ in history.frames()]
    assert len(frames) == 4 and frames[0] == 0 and frames[-1] == 4
    np.testing.assert_array_equal(history.snapshots[-1][1][0],
                                  attention_maps(model, x[0], "cpu")[0])
    assert np.abs(history.snapshots[-1][1][0] - before[0]).max() > 1e-3   # it did change
    assert written == ["attention_evolution.png", "attention_evolution.gif"]
    assert Image.open(tmp_path / "attention_evolution.gif").n_frames == 4
    width, height = Image.open(tmp_path / "attention_evolution.png").size
    assert 300 < width < 3000 and 300 < height < 3000


def test_evolution_figure_has_a_map_per_head_and_step_and_says_what_rows_are():
    rng = np.random.default_rng(0)
    snapshots = [(s, [rng.dirichlet(np.ones(5), size=(2, 5)) for _ in range(2)])
                 for s in (0, 10, 50)]
    fig = evolution_figure(snapshots, list("ab cd"), "toy")
    ax = _panels(fig)[0]
    image = ax.get_images()[0].get_array()
    gap = 1                                                    # max(1, 5 // 5)
    assert image.shape == (4 * 5 + 3 * gap, 3 * 5 + 2 * gap)  # 4 heads down, 3 steps across
    # row 3 = layer 1 head 1, column 1 = step 10
    block = image[3 * 6:3 * 6 + 5, 1 * 6:1 * 6 + 5]
    np.testing.assert_array_equal(block, snapshots[1][1][1][1])
    texts = [t.get_text() for t in ax.texts]
    assert [t for t in texts if t.startswith("step")] == ["step 0", "step 10", "step 50"]
    assert " layer 1\n head 1" in texts
    assert "\u2423" in [t.get_text() for t in ax.get_xticklabels()]
    assert "row i: the query at position i, which predicts token i+1" in fig._suptitle.get_text()
    assert any(a.get_ylabel() == "attention weight" for a in fig.axes)
    _close(fig)
