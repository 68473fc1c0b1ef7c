"""Pictures that cannot be misread: masked cells are not weights of 0, unscored query rows are
marked, the attention-over-training frames sit where the maps change and their labels are
readable, and positional.png says what to look for. Read from matplotlib's artists."""
import numpy as np
import pytest

from tinyattn.train import attention_history as history
from tinyattn.train import plots
from tinyattn.train.plot_positional import LOOK_FOR, positional_figure
from tinyattn.train.tasks import make_task

pytest.importorskip("matplotlib")
PNG_DPI = 110          # plots._save


def _close(fig):
    import matplotlib.pyplot as plt
    plt.close(fig)


def _causal_weights(length, heads=2, seed=0):
    rng = np.random.default_rng(seed)
    w = np.zeros((heads, length, length))
    for i in range(length):
        w[:, i, :i + 1] = rng.dirichlet(np.ones(i + 1), size=heads)
    w[:, -1, 0] = 0.0                      # a real weight of 0, in the visible part
    w[:, -1] /= w[:, -1].sum(axis=-1, keepdims=True)
    return w


def test_masked_future_cells_are_not_drawn_as_a_weight_of_zero():
    w = _causal_weights(6)
    fig = plots.attention_figure([w], list("abc|de"), "t")
    image = fig.axes[0].get_images()[0]
    drawn = np.ma.getdata(image.get_array()).astype(float)
    future = np.triu(np.ones((6, 6), dtype=bool), k=1)
    assert np.isnan(drawn[future]).all()                      # masked: the "bad" colour
    assert drawn[5, 0] == 0.0                                  # a weight of 0 stays a 0
    bad = image.get_cmap().get_bad()
    assert np.allclose(bad[:3], [200 / 255] * 3)                # grey, not viridis' purple
    assert not np.allclose(bad[:3], image.get_cmap()(0.0)[:3])
    assert plots.MASK_CAPTION in fig._suptitle.get_text()
    _close(fig)


def test_negative_control_without_a_causal_mask_nothing_is_marked():
    fig = plots.attention_figure([_causal_weights(6)], list("abc|de"), "t", causal=False)
    drawn = np.ma.getdata(fig.axes[0].get_images()[0].get_array()).astype(float)
    assert not np.isnan(drawn).any()
    assert plots.MASK_CAPTION not in fig._suptitle.get_text()
    _close(fig)


def test_unscored_query_rows_are_marked_for_the_toy_tasks():
    assert plots.scored_from(make_task("reverse")) == 8        # 8 digits then "|"
    assert plots.scored_from(make_task("addition")) == make_task("addition").prompt_len - 1
    assert plots.scored_from(make_task("chars")) == 0           # every position is scored
    fig = plots.attention_figure([_causal_weights(6)], list("abc|de"), "t", scored_from=3)
    ax = fig.axes[0]
    colours = [label.get_color() for label in ax.get_yticklabels()]
    assert colours[:3] == ["0.55"] * 3 and "0.55" not in colours[3:]
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--"]
    assert len(dashed) == 1 and dashed[0].get_ydata()[0] == 2.5
    assert plots.UNSCORED_CAPTION in fig._suptitle.get_text()
    _close(fig)
    unmarked = plots.attention_figure([_causal_weights(6)], list("abc|de"), "t")
    assert not [line for line in unmarked.axes[0].get_lines()]
    _close(unmarked)


def _snapshots(steps, change_from, change_to, length=5):
    """Maps that stay put, move linearly between two steps, then stay put again."""
    start, end = _causal_weights(length, seed=1), _causal_weights(length, seed=2)
    out = []
    for step in steps:
        f = np.clip((step - change_from) / (change_to - change_from), 0, 1)
        out.append((step, [(1 - f) * start + f * end]))
    return out


def test_frames_sit_where_the_attention_changes():
    snapshots = _snapshots(history.candidate_steps(500), 40, 70)
    frames = [snapshots[i][0] for i in history.frames_by_change(snapshots, 7)]
    assert frames[0] == 0 and frames[-1] == 500 and len(frames) == 7
    inside = [s for s in frames if 40 <= s <= 70]
    assert len(inside) >= 4, frames
    # negative control: the log-spaced steps used before put at most one frame there
    evenly = history.snapshot_steps(500)
    assert len([s for s in evenly if 40 <= s <= 70]) <= 1


def test_a_change_in_one_step_keeps_the_frame_before_it():
    snapshots = _snapshots(range(0, 101), 49.5, 50)
    frames = [snapshots[i][0] for i in history.frames_by_change(snapshots, 5)]
    assert 49 in frames and 50 in frames and len(frames) == 5


def test_candidates_are_every_step_for_short_runs_and_bounded_for_long_ones():
    assert history.candidate_steps(100) == list(range(101))
    long = history.candidate_steps(20000)
    assert long[0] == 0 and long[-1] == 20000 and len(long) < 250
    assert long == sorted(set(long))


def test_evolution_labels_are_at_least_10_pixels_and_the_axes_are_titled():
    snapshots = _snapshots([0, 10, 20], 0, 20, length=16)
    fig = history.evolution_figure(snapshots, list("12345678|8765432"), "t", scored_from=8)
    ax = [a for a in fig.axes if a.get_label() != "<colorbar>"][0]
    sizes = [label.get_fontsize() for label in ax.get_xticklabels() + ax.get_yticklabels()]
    assert min(sizes) * PNG_DPI / 72 >= 10
    assert history._GIF_LABEL_PT * history._GIF_DPI / 72 >= 10
    assert "key" in ax.get_xlabel() and "query" in ax.get_ylabel()
    steps = [t for t in ax.texts if t.get_text().startswith("step")]
    assert [t.get_text() for t in steps] == ["step 0", "step 10", "step 20"]
    assert min(t.get_fontsize() for t in steps) * PNG_DPI / 72 >= 10
    greys = [label.get_color() for label in ax.get_yticklabels()][:16]
    assert greys[:8] == ["0.55"] * 8 and "0.55" not in greys[8:]
    assert "not evenly spaced steps" in fig._suptitle.get_text()
    overlay = ax.get_images()[1].get_array()                    # the masked cells, grey
    assert overlay[0, 1, 3] == 1.0 and overlay[1, 0, 3] == 0.0
    _close(fig)


@pytest.mark.parametrize("kind", ["learned", "sinusoidal", "rope", "alibi", "none"])
def test_positional_figure_says_what_to_look_for(kind):
    import tinyattn as ta
    from tinyattn import nn
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=16, n_layer=1, n_head=4,
                                d_model=32, pos_encoding=kind))
    fig = positional_figure(model, 16)
    assert LOOK_FOR[kind] in fig._suptitle.get_text()
    assert LOOK_FOR[kind].startswith("look for:")
    _close(fig)


def test_inside_a_notebook_the_plots_keep_the_notebooks_backend():
    """Outside a kernel the training plots switch matplotlib to Agg (files, no display);
    inside one (ipykernel loaded) they must not, or the notebook's inline pictures stop."""
    import subprocess
    import sys
    script = ("import sys, types\n{fake}import matplotlib\nmatplotlib.use('svg')\n"
              "from tinyattn.train import plots\nplots._pyplot()\n"
              "print(matplotlib.get_backend())\n")
    fake = "sys.modules['ipykernel'] = types.ModuleType('ipykernel')\n"
    results = [subprocess.run([sys.executable, "-c", script.format(fake=f)], text=True,
                              capture_output=True, timeout=120) for f in (fake, "")]
    assert [r.stdout.strip().lower() for r in results] == ["svg", "agg"], results
