"""Leftovers of the probe39 outside probe (issue 30), each checked against torch."""
import pytest

import tinyattn as ta

torch = pytest.importorskip("torch", reason="torch is the oracle for these tests")


def _outcome(lib, f):
    x = lib.arange(6.)
    try:
        f(lib, x)
    except RuntimeError as exc:
        assert "single memory location" in str(exc)
        return "raises"
    return [float(v) for v in x.tolist()]


OVERLAP_CASES = {
    "setitem_shift": lambda lib, x: x.__setitem__(slice(1, 4), x[0:3]),
    "copy_shift": lambda lib, x: x[1:4].copy_(x[0:3]),
    "copy_same_view": lambda lib, x: x[1:4].copy_(x[1:4]),
    "copy_whole_other_shape": lambda lib, x: x.copy_(x.view(1, 6)),
    "copy_broadcast_overlap": lambda lib, x: x[0:4].copy_(x[1:2]),
    "copy_broadcast_apart": lambda lib, x: x[1:4].copy_(x[0:1]),
    "setitem_apart": lambda lib, x: x.__setitem__(slice(3, 6), x[0:3]),
    "add_shift": lambda lib, x: x[1:4].add_(x[0:3]),
    "add_same_view": lambda lib, x: x[1:4].add_(x[1:4]),
    "mul_shift": lambda lib, x: x[1:4].mul_(x[0:3]),
    "pow_shift": lambda lib, x: x[1:4].pow_(x[0:3]),
    "clamp_shift": lambda lib, x: x[1:4].clamp_(min=x[0:3]),
    "lerp_shift": lambda lib, x: x[1:4].lerp_(x[0:3], 0.5),
    "index_put_shift": lambda lib, x: x[1:4].index_put_((lib.tensor([0, 1, 2]),), x[0:3]),
    "setitem_index_overlap": lambda lib, x: x.__setitem__(lib.tensor([3, 4, 5]), x[0:3]),
    "setitem_mask_overlap": lambda lib, x: x.__setitem__(x > 2, x[0:3]),
    "setitem_row_index_apart": lambda lib, x: x.view(2, 3).__setitem__(
        (0, lib.tensor([0, 1, 2])), x.view(2, 3)[1]),
    "strided_not_checked": lambda lib, x: x[0::2].copy_(x[1::2]),
    "iadd_self": lambda lib, x: x.__iadd__(x),
}


@pytest.mark.parametrize("case", sorted(OVERLAP_CASES))
def test_partial_overlap_refused_as_torch(case):
    f = OVERLAP_CASES[case]
    assert _outcome(ta, f) == _outcome(torch, f)


def test_partial_overlap_control_some_raise_some_not():
    # negative control: the table above holds both outcomes, so it cannot pass vacuously
    outcomes = [_outcome(torch, f) == "raises" for f in OVERLAP_CASES.values()]
    assert any(outcomes) and not all(outcomes)


CLAMP_CASES = [
    ("uint8", dict(min=-1)), ("uint8", dict(max=-1)), ("uint8", dict(max=256)),
    ("uint8", dict(min=-255)), ("uint8", dict(min=-256)), ("uint8", dict(min=-1, max=3)),
    ("int8", dict(min=200)), ("int8", dict(max=-200)), ("int16", dict(min=70000)),
    ("int32", dict(min=2 ** 40)), ("uint8", dict(min=True)), ("int64", dict(min=True, max=1)),
    ("uint8", dict(min=1.5)), ("uint8", dict(min=2.0)), ("int32", dict(max=3.0)),
    ("bool", dict(min=True)), ("bool", dict(max=False)), ("bool", dict(min=True, max=True)),
    ("bool", dict(min=2)), ("bool", dict(min=-1)), ("float32", dict(min=True)),
    ("float16", dict(min=-1)),
]


def _clamp_outcome(lib, dtype, kwargs):
    x = lib.tensor([1, 0, 2], dtype=getattr(lib, dtype))
    try:
        r = lib.clamp(x, **kwargs)
    except (RuntimeError, NotImplementedError) as exc:
        return type(exc).__name__, str(exc).split(" (")[0]
    return str(r.dtype).replace("torch.", ""), r.tolist()


@pytest.mark.parametrize("dtype,kwargs", CLAMP_CASES, ids=[f"{d}-{k}" for d, k in CLAMP_CASES])
def test_clamp_number_bounds_of_integer_tensors_as_torch(dtype, kwargs):
    assert _clamp_outcome(ta, dtype, kwargs) == _clamp_outcome(torch, dtype, kwargs)


def test_clamp_uint8_wrapped_bound_control():
    # the probe's case: -1 wraps to 255, so every element becomes 255 (not [1, 0, 2])
    assert ta.clamp(ta.tensor([1, 0, 2], dtype=ta.uint8), min=-1).tolist() == [255, 255, 255]
    x = ta.tensor([1, 0, 2], dtype=ta.uint8)
    x.clamp_(min=-1)
    assert x.tolist() == [255, 255, 255]


def _saved_views(lib, save, load):
    import io
    x = lib.arange(6.).reshape(3, 2)
    buffer = io.BytesIO()
    save({"x": x, "row": x[1], "t": x.t(), "tail": lib.arange(3.)[1:]}, buffer)
    buffer.seek(0)
    loaded = load(buffer)
    loaded["row"][0] = 100.          # a write through the view reaches the base, as torch's
    return (loaded["x"].tolist(), tuple(loaded["t"].stride()), loaded["tail"].tolist(),
            tuple(loaded["tail"].stride()))


def test_save_load_keeps_views_and_strides_as_torch():
    from tinyattn.io.torch_file import load_torch, save_torch
    ours = _saved_views(ta, save_torch, load_torch)
    assert ours == _saved_views(torch, torch.save, torch.load)
    assert ours[0][1] == [100.0, 3.0]            # control: the write reached the base


def test_torch_written_views_load_shared_here():
    import io
    from tinyattn.io.torch_file import load_torch
    x = torch.arange(6.).reshape(3, 2)
    buffer = io.BytesIO()
    torch.save({"x": x, "t": x.t()}, buffer)
    buffer.seek(0)
    loaded = load_torch(buffer)
    loaded["x"][0, 0] = 7.
    assert loaded["t"].tolist() == [[7.0, 2.0, 4.0], [1.0, 3.0, 5.0]]
    assert tuple(loaded["t"].stride()) == (1, 2)


def test_run_torch_dtype_and_device_load_back_as_objects():
    import io
    from tinyattn.io.torch_file import load_torch, save_torch
    from tinyattn.torch_shim.shim_names import device, dtype
    buffer = io.BytesIO()
    save_torch({"d": dtype("float16"), "v": device("cpu")}, buffer)
    buffer.seek(0)
    loaded = load_torch(buffer)
    assert type(loaded["d"]) is dtype and loaded["d"] == "float16"   # was the str 'float16'
    assert type(loaded["v"]) is device and loaded["v"].type == "cpu"
    buffer.seek(0)
    theirs = torch.load(buffer)          # and torch reads the file as its own objects
    assert theirs["d"] is torch.float16 and theirs["v"] == torch.device("cpu")


def test_sqrt_backward_at_zero_is_inf_without_a_numpy_warning():
    import warnings
    x = ta.tensor([0., 1.], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ta.sqrt(x).sum().backward()
    y = torch.tensor([0., 1.], requires_grad=True)
    torch.sqrt(y).sum().backward()
    assert x.grad.tolist() == y.grad.tolist() == [float("inf"), 0.5]


def test_tensor_dataset_size_mismatch_is_torch_assertion_error():
    from tinyattn.utils.data import TensorDataset
    from torch.utils.data import TensorDataset as TorchDataset
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TorchDataset(torch.ones(3), torch.ones(4))
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(ta.ones(3), ta.ones(4))
    assert len(TensorDataset(ta.ones(3), ta.ones(3))) == 3     # control: equal sizes work


def test_histogram_default_bins_are_100_as_torch():
    values = [1., 2., 3., 7.5]
    ours = ta.histogram(ta.tensor(values), density=True)
    theirs = torch.histogram(torch.tensor(values), density=True)
    assert tuple(ours[0].shape) == tuple(theirs[0].shape) == (100,)
    assert ours[0].tolist() == pytest.approx(theirs[0].tolist())
    assert ours[1].tolist() == pytest.approx(theirs[1].tolist())


SECOND_BACKWARD = {
    "add_zero": lambda x: x + 0, "sum": lambda x: (x + 1).sum(), "neg": lambda x: -x,
    "view": lambda x: x.view(3, 1), "sub_self": lambda x: x - x,
    "mul_self": lambda x: x * x, "exp": lambda x: x.exp(), "relu": lambda x: x.relu(),
}


def _twice(lib, f):
    x = lib.ones(3, requires_grad=True)
    y = f(x)
    y.backward(lib.ones_like(y))
    try:
        y.backward(lib.ones_like(y))
    except RuntimeError as exc:
        assert "second time" in str(exc)
        return "raises"
    return x.grad.tolist()


@pytest.mark.parametrize("case", sorted(SECOND_BACKWARD))
def test_second_backward_refused_only_where_arrays_were_saved(case):
    # control inside the table: mul_self/exp/relu saved arrays and raise in both
    assert _twice(ta, SECOND_BACKWARD[case]) == _twice(torch, SECOND_BACKWARD[case])
