"""``nn.utils.rnn.pad_sequence``: PyTorch's layout, sides and padding value, its gradient
(float64 gradcheck), clear errors, and the ``torch.nn.utils.rnn`` path under run-torch."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.nn.utils.rnn import pad_sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RNG = np.random.default_rng(0)
LENGTHS = (2, 5, 3)


def _sequences(trailing=(3,), dtype=np.float64):
    return [RNG.standard_normal((n,) + trailing).astype(dtype) for n in LENGTHS]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("trailing", [(), (3,), (2, 2)])
def test_layout_side_and_value_match_torch(batch_first, side, trailing):
    torch = pytest.importorskip("torch")
    arrays = _sequences(trailing)
    ours = pad_sequence([ta.tensor(a) for a in arrays], batch_first, -7.0, side)
    theirs = torch.nn.utils.rnn.pad_sequence([torch.tensor(a) for a in arrays], batch_first,
                                             -7.0, side)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_values_without_torch_sequence_first_by_default():
    """The default layout is PyTorch's (T, B, *): sequence i is column i."""
    arrays = _sequences()
    out = pad_sequence([ta.tensor(a) for a in arrays]).numpy()      # (T, B, 3)
    assert out.shape == (5, 3, 3)
    for i, a in enumerate(arrays):
        np.testing.assert_array_equal(out[:len(a), i], a)
        np.testing.assert_array_equal(out[len(a):, i], 0.0)
    left = pad_sequence([ta.tensor(a) for a in arrays], True, 1.5, "left").numpy()
    np.testing.assert_array_equal(left[0, :3], 1.5)
    np.testing.assert_array_equal(left[0, 3:], arrays[0])


def test_gradient_is_each_sequences_rows_gradcheck():
    inputs = [ta.tensor(a, requires_grad=True) for a in _sequences()]
    assert ta.gradcheck(lambda *xs: pad_sequence(list(xs), True, 2.0, "left") ** 2, inputs)
    out = pad_sequence(inputs)                                          # (T, B, 3)
    weights = ta.tensor(RNG.standard_normal(out.shape))
    (out * weights).sum().backward()
    for i, x in enumerate(inputs):
        np.testing.assert_array_equal(x.grad.numpy(), weights.numpy()[:LENGTHS[i], i])


def test_integer_sequences_keep_their_dtype_and_a_tensor_is_a_list_of_rows():
    out = pad_sequence([ta.tensor([1, 2]), ta.tensor([3])], batch_first=True)
    assert out.dtype == ta.int64
    np.testing.assert_array_equal(out.numpy(), [[1, 2], [3, 0]])
    square = ta.tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(pad_sequence(square).numpy(), square.numpy().T)


def test_mask_for_the_padded_batch_hides_the_padding():
    """The usual pairing: pad, then nn.key_padding_mask (True = padding) for attention."""
    lengths = [len(a) for a in _sequences()]
    mask = nn.key_padding_mask(ta.tensor(lengths), 5)
    expected = np.arange(5)[None, :] >= np.array(lengths)[:, None]
    np.testing.assert_array_equal(mask.numpy(), expected)


@pytest.mark.parametrize("bad, match", [
    ([], "empty list"),
    ([ta.ones(2, 3), ta.ones(2, 4)], r"shape \(2, 4\).*\(2, 3\)"),
    ([ta.ones(2), np.ones(2)], "not a Tensor"),
    ([ta.tensor(1.0)], "0-d"),
])
def test_bad_input_gives_a_clear_error(bad, match):
    with pytest.raises((ValueError, TypeError), match=match):
        pad_sequence(bad)
    with pytest.raises(ValueError, match="padding_side"):
        pad_sequence([ta.ones(2)], padding_side="middle")


def test_torch_path_works_under_run_torch(tmp_path):
    script = tmp_path / "pad.py"
    script.write_text(textwrap.dedent("""
        import torch
        from torch.nn.utils.rnn import pad_sequence
        batch = pad_sequence([torch.ones(2), torch.ones(4)], batch_first=True)
        print(tuple(batch.shape), batch.sum().item())
        """))
    env = dict(os.environ, PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    result = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["(2,", "4)", "6.0"]
