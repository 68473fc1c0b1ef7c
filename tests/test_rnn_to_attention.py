"""examples/rnn_to_attention.py: the smoke run writes its three pictures, and the claim its
gradient picture makes holds (untrained models, so it is fast): from the loss on the last
target token, the gradient reaching source position 0 fades through a plain GRU
encoder-decoder and arrives undiminished through attention."""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import tinyattn as ta

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "rnn_to_attention.py"


def _load():
    spec = importlib.util.spec_from_file_location("rnn_to_attention", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_writes_the_three_pictures(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert _load().main(["--quick", "--out-dir", str(tmp_path)]) == 0
    for name in ("accuracy_vs_length.png", "gradient_reach.png", "alignment.png"):
        assert (tmp_path / name).stat().st_size > 1000
    out = capsys.readouterr().out
    assert "held-out accuracy" in out and "Bahdanau" in out and "transformer" in out


@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_fades_through_the_rnn_and_not_through_attention(seed):
    example = _load()
    reach = {}
    for name in ("no attention", "Bahdanau", "Luong general"):
        ta.manual_seed(seed)
        reach[name] = example.gradient_reach(example.build(name, 32), 12,
                                             np.random.default_rng(seed))
    plain = reach["no attention"]
    assert plain[0] < plain[-1] / 50                     # faded over 2 x 12 steps
    for name in ("Bahdanau", "Luong general"):
        assert reach[name][0] > 100 * plain[0]           # one step through attention
        assert reach[name][0] > reach[name][-1] / 10     # position 0 is not disadvantaged


def test_the_reversal_task_and_its_alignment_shape():
    example = _load()
    source, decoder_in, target = example.make_batch(np.random.default_rng(0), 3, 5)
    np.testing.assert_array_equal(target.numpy(), source.numpy()[:, ::-1])
    assert (decoder_in.numpy()[:, 0] == example.START).all()
    np.testing.assert_array_equal(decoder_in.numpy()[:, 1:], target.numpy()[:, :-1])
