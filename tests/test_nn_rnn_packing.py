"""nn.utils.rnn's packed sequences against torch's: layout (data, batch_sizes, sorted and
unsorted indices, ties sorted stably as torch), the round trip, gradients through packing,
PackedSequence's tuple behaviour and .to(), and the errors (unsorted lengths with
enforce_sorted, a length of zero, too many or too few lengths, total_length too short, and a
length longer than the input, which torch does not check)."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.nn.utils import rnn as ta_rnn

torch = pytest.importorskip("torch", reason="packed sequences are compared with torch's")
R = torch.nn.utils.rnn
RNG = np.random.default_rng(7)

LENGTH_CASES = [([5, 3, 2], True), ([5, 5, 1], True), ([2, 5, 3], False),
                ([3, 3, 3], False), ([1, 4, 4, 2], False), ([4], True)]


def _same(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    np.testing.assert_array_equal(np.asarray(a.numpy()), b.detach().numpy())


@pytest.mark.parametrize("lengths, enforce_sorted", LENGTH_CASES)
@pytest.mark.parametrize("batch_first", [False, True])
def test_pack_and_pad_match_torch(lengths, enforce_sorted, batch_first):
    batch, steps = len(lengths), 5
    x = RNG.standard_normal((batch, steps, 2) if batch_first else (steps, batch, 2))
    ours = ta_rnn.pack_padded_sequence(ta.tensor(x), lengths, batch_first, enforce_sorted)
    theirs = R.pack_padded_sequence(torch.tensor(x), lengths, batch_first, enforce_sorted)
    for a, b in zip(ours, theirs):
        _same(a, b)
    for total in (None, 6):
        padded, out_lengths = ta_rnn.pad_packed_sequence(ours, batch_first, -1.5, total)
        t_padded, t_lengths = R.pad_packed_sequence(theirs, batch_first, -1.5, total)
        _same(padded, t_padded)
        _same(out_lengths, t_lengths)
        assert out_lengths.dtype == ta.int64


def test_pack_sequence_and_unpack_match_torch():
    arrays = [RNG.standard_normal((n, 3)) for n in (2, 4, 1)]
    ours = ta_rnn.pack_sequence([ta.tensor(a) for a in arrays], enforce_sorted=False)
    theirs = R.pack_sequence([torch.tensor(a) for a in arrays], enforce_sorted=False)
    for a, b in zip(ours, theirs):
        _same(a, b)
    for got, want in zip(ta_rnn.unpack_sequence(ours), arrays):
        np.testing.assert_array_equal(got.numpy(), want)


def test_gradient_flows_back_through_pack_and_pad():
    x_o = ta.tensor(RNG.standard_normal((4, 3, 2)), requires_grad=True)
    x_t = torch.tensor(x_o.numpy(), requires_grad=True)
    weights = RNG.standard_normal((4, 3, 2))
    for module, x in ((ta_rnn, x_o), (R, x_t)):
        packed = module.pack_padded_sequence(x, [2, 4, 1], enforce_sorted=False)
        padded, _ = module.pad_packed_sequence(packed)
        (padded * (ta.tensor(weights) if module is ta_rnn else torch.tensor(weights))
         ).sum().backward()
    np.testing.assert_array_equal(x_o.grad.numpy(), x_t.grad.numpy())
    assert np.all(x_o.grad.numpy()[2:, 0] == 0)        # padding gets no gradient


def test_packed_sequence_is_torchs_named_tuple():
    packed = ta_rnn.pack_padded_sequence(ta.zeros(3, 2, 1), [3, 1])
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert packed._fields == R.PackedSequence._fields
    assert batch_sizes.tolist() == [2, 1, 1] and sorted_indices is None
    doubled = packed.double()
    assert doubled.data.dtype == ta.float64 and doubled.batch_sizes is packed.batch_sizes
    assert packed.to(ta.float32) is packed


@pytest.mark.parametrize("lengths, kwargs", [([3, 5, 2], {}), ([5, 3, 0], {}), ([5, 3], {}),
                                             ([5, 3, 2, 1], {})])
def test_bad_lengths_fail_as_torch_does(lengths, kwargs):
    x = np.zeros((5, 3, 2))
    with pytest.raises(RuntimeError) as theirs:
        R.pack_padded_sequence(torch.tensor(x), lengths, **kwargs)
    with pytest.raises(RuntimeError) as ours:
        ta_rnn.pack_padded_sequence(ta.tensor(x), lengths, **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_a_length_longer_than_the_input_is_an_error():
    """torch packs it anyway, reading past the tensor (values vary run to run); tinyattn
    says what is wrong."""
    with pytest.raises(ValueError, match="longer than the sequences in input"):
        ta_rnn.pack_padded_sequence(ta.zeros(5, 2, 3), [6, 2])


def test_lengths_on_another_device_or_float_are_refused():
    with pytest.raises(RuntimeError, match="integers"):
        ta_rnn.pack_padded_sequence(ta.zeros(5, 2, 3), ta.tensor([5.0, 2.0]))


def test_total_length_shorter_than_the_longest_fails_as_torch():
    packed = ta_rnn.pack_padded_sequence(ta.zeros(4, 2, 1), [4, 2])
    with pytest.raises(ValueError) as ours:
        ta_rnn.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(ValueError) as theirs:
        R.pad_packed_sequence(R.pack_padded_sequence(torch.zeros(4, 2, 1), [4, 2]),
                              total_length=2)
    assert str(ours.value) == str(theirs.value)


def test_negative_control_a_different_order_is_noticed():
    x = RNG.standard_normal((4, 3, 2))
    ours = ta_rnn.pack_padded_sequence(ta.tensor(x), [2, 4, 1], enforce_sorted=False)
    theirs = R.pack_padded_sequence(torch.tensor(x[:, ::-1].copy()), [1, 4, 2],
                                    enforce_sorted=False)
    with pytest.raises(AssertionError):
        _same(ours.data, theirs.data[[1, 0, 2, 3, 4, 5, 6]])
