"""Probe39: adversarial probes and outside learner programs run next to real torch.

Each test reproduces one disagreement found by running a PyTorch program (or a small probe of
the calling pattern) under ``python -m tinyattn run-torch`` and with torch; torch is the
oracle. No outside code is kept here: only self-written equivalents of the calling pattern.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tinyattn as ta


def _torch():
    return pytest.importorskip("torch", reason="torch is the reference for these behaviours")


def _same_weights(ours, theirs):
    """Give two modules of the same architecture torch's values, parameter by parameter."""
    for (n1, p1), (n2, p2) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert n1 == n2
        with ta.no_grad():
            p1.copy_(ta.tensor(p2.detach().numpy()))


def _np(t):
    return None if t is None else (t.detach().numpy() if hasattr(t, "detach") else t.numpy())


# ------------------------------------------------------------------------ printing
@pytest.mark.parametrize("dtype", ["int64", "bool", "int32", "float64", "float32", "float16"])
def test_repr_of_empty_tensor_names_every_dtype_but_the_default_float(dtype):
    torch = _torch()
    from tinyattn.printing import tensor_repr
    for shape in ((0,), (2, 0)):
        theirs = repr(torch.zeros(shape, dtype=getattr(torch, dtype)))
        ours = tensor_repr(ta.zeros(shape, dtype=getattr(ta, dtype)).numpy())
        assert ours == theirs.replace("torch.", "")


def test_repr_of_non_empty_int64_keeps_no_dtype():         # negative control
    from tinyattn.printing import tensor_repr
    assert tensor_repr(np.array([1, 2])) == "tensor([1, 2])"


# ------------------------------------------------------------------------ module hooks
def _mlp(nn):
    return nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))


def _run_hooks(framework, x_requires_grad, weights_from=None):
    nn = framework.nn
    model = _mlp(nn)
    if weights_from is not None:
        _same_weights(model, weights_from)
    log, shapes = [], []
    model[0].register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    model[1].register_forward_hook(lambda m, args, out: shapes.append(tuple(out.shape)))
    model[2].register_forward_hook(lambda m, args, out: out + 1)

    def backward_hook(module, grad_input, grad_output):
        log.append(([_np(g) for g in grad_input], [_np(g) for g in grad_output]))
    for sub in model:
        sub.register_full_backward_hook(backward_hook)
    model[1].register_full_backward_hook(lambda m, gi, go: (gi[0] * 0.5,))
    model[2].register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
    x = framework.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=x_requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model(x)
        out.sum().backward()
    return model, x, out, log, shapes


@pytest.mark.parametrize("x_requires_grad", [False, True])
def test_module_forward_and_backward_hooks_follow_torch(x_requires_grad):
    # register_forward_pre_hook / register_forward_hook (replacing args and output),
    # register_full_backward_hook (grad_input replaced) and its pre-hook (grad_output
    # replaced): tinyattn's Module had none of them (an AttributeError under run-torch)
    torch = _torch()
    torch.manual_seed(0)
    ref = _run_hooks(torch, x_requires_grad)
    ours = _run_hooks(ta, x_requires_grad, weights_from=ref[0])
    np.testing.assert_allclose(_np(ours[2]), _np(ref[2]), rtol=1e-6)
    assert ours[4] == ref[4] == [(2, 3)]
    assert len(ours[3]) == len(ref[3]) == 3
    for (gi1, go1), (gi2, go2) in zip(ours[3], ref[3]):
        assert [g is None for g in gi1] == [g is None for g in gi2]
        for a, b in zip(gi1 + go1, gi2 + go2):
            if b is not None:
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    for p1, p2 in zip(ours[0].parameters(), ref[0].parameters()):
        np.testing.assert_allclose(_np(p1.grad), _np(p2.grad), rtol=1e-5, atol=1e-7)
    if x_requires_grad:
        np.testing.assert_allclose(_np(ours[1].grad), _np(ref[1].grad), rtol=1e-5)


def test_backward_hook_sees_only_this_modules_share_of_a_reused_input():
    torch = _torch()
    results = []
    for fw in (torch, ta):
        x = fw.tensor([1.0, 2.0], requires_grad=True)
        seen = []
        layer = fw.nn.Tanh()
        layer.register_full_backward_hook(lambda m, gi, go: seen.append(_np(gi[0]).copy()))
        (layer(x) + x * 5).sum().backward()
        results.append((seen, _np(x.grad)))
    np.testing.assert_allclose(results[1][0][0], results[0][0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
    assert not np.allclose(results[1][0][0], results[1][1])      # the hook saw tanh's part


def test_backward_hook_grad_output_has_none_for_non_tensor_outputs():
    torch = _torch()
    for fw in (torch, ta):
        lstm = fw.nn.LSTM(2, 3, batch_first=True)
        got = []
        lstm.register_full_backward_hook(lambda m, gi, go: got.append([g is None for g in go]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, _ = lstm(fw.ones(1, 4, 2))
            out.sum().backward()
        assert got == [[False, True]], fw.__name__


def test_forward_hooks_with_kwargs_handles_and_dicts():
    torch = _torch()
    outs = []
    for fw in (torch, ta):
        class Scale(fw.nn.Module):
            def forward(self, a, scale=1.0):
                return a * scale
        module = Scale()
        assert len(module._forward_hooks) == 0 and len(module._forward_pre_hooks) == 0
        h1 = module.register_forward_pre_hook(lambda m, args, kwargs: (args, {"scale": 5.0}),
                                              with_kwargs=True)
        module.register_forward_hook(lambda m, args, kwargs, o: o + kwargs["scale"],
                                     with_kwargs=True)
        order = []
        module.register_forward_hook(lambda m, a, o: order.append("second"))
        module.register_forward_hook(lambda m, a, o: order.append("first"), prepend=True)
        first = _np(module(fw.ones(2), scale=2.0)).tolist()
        h1.remove()
        with module.register_forward_hook(lambda m, a, o: o * 0):
            inside = _np(module(fw.ones(2), scale=2.0)).tolist()
        after = _np(module(fw.ones(2), scale=2.0)).tolist()
        outs.append((first, inside, after, order, len(module._forward_hooks)))
    assert outs[0] == outs[1]
    assert outs[1][0] == [10.0, 10.0] and outs[1][1] == [0.0, 0.0]   # hooks took effect


# ------------------------------------------------------------------------ views
VIEW_WRITES = [
    ("diagonal fill_", lambda t: t.arange(6.0).reshape(2, 3), lambda x: x.diagonal().fill_(0)),
    ("diagonal offset copy_", lambda t: t.arange(9.0).reshape(3, 3),
     lambda x: x.diagonal(1).copy_(x.new_tensor([-1.0, -2.0]) if hasattr(x, "new_tensor")
                                   else None)),
    ("batched diagonal zero_", lambda t: t.arange(18.0).reshape(2, 3, 3),
     lambda x: x.diagonal(dim1=-2, dim2=-1).zero_()),
    ("unfold setitem", lambda t: t.arange(6.0).reshape(2, 3),
     lambda x: x.unfold(1, 1, 2).__setitem__((0, 1, 0), -5.0)),
    ("unfold non-overlapping mul_", lambda t: t.arange(8.0), lambda x: x.unfold(0, 2, 2).mul_(3)),
]


@pytest.mark.parametrize("name,make,write", VIEW_WRITES, ids=[c[0] for c in VIEW_WRITES])
def test_writes_through_diagonal_and_unfold_reach_the_base_as_torch(name, make, write):
    # both were copies here: the write was lost silently (torch's are views)
    torch = _torch()
    results = []
    for fw in (torch, ta):
        x = make(fw)
        write(x)
        results.append(_np(x))
    np.testing.assert_array_equal(results[1], results[0])
    assert not np.array_equal(results[1], _np(make(ta)))          # the write landed


def test_diagonal_view_write_with_gradients_follows_torch():
    torch = _torch()
    grads = []
    for fw in (torch, ta):
        x = fw.arange(9.0, requires_grad=True)
        y = (x * 1).reshape(3, 3)
        y.diagonal(1).mul_(3)
        (y ** 2).sum().backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[1], grads[0])


def test_overlapping_unfold_windows_refuse_writes_loudly():
    x = ta.arange(6.0)
    windows = x.unfold(0, 3, 1)
    assert windows.sum(-1).tolist() == [3.0, 6.0, 9.0, 12.0]
    with pytest.raises(RuntimeError):
        windows[0, 1] = 5.0
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


# ------------------------------------------------------------------------ data
def test_subset_and_weighted_random_samplers_follow_torch():
    # both were missing (run-torch stopped at the import of torch.utils.data)
    torch = _torch()
    for fw in (torch, ta):
        data = fw.utils.data
        subset = data.SubsetRandomSampler([5, 7, 9])
        assert len(subset) == 3 and sorted(subset) == [5, 7, 9]
        loader = data.DataLoader(fw.arange(10) * 10, batch_size=2,
                                 sampler=data.SubsetRandomSampler([1, 3, 5]))
        assert sorted(sum((b.tolist() for b in loader), [])) == [10, 30, 50]
        weighted = data.WeightedRandomSampler([0.0, 1.0, 0.0], 6)
        assert len(weighted) == 6 and list(weighted) == [1] * 6
        assert weighted.weights.dtype == fw.float64
        no_repl = data.WeightedRandomSampler([0.5, 0.0, 2.0, 1.0], 4, replacement=False)
        drawn = list(no_repl)
        assert sorted(drawn) == [0, 1, 2, 3] and drawn[-1] == 1      # the zero weight last
        with pytest.raises(ValueError):
            data.WeightedRandomSampler([0.5], 0)
        with pytest.raises(RuntimeError):
            list(data.WeightedRandomSampler([0.5, 1.0], 3, replacement=False))


def test_collate_and_convert_keep_torch_container_types():
    # a tuple field of strings stays a tuple in a batch; batch_size=None turns tuples into
    # lists and NumPy scalars into tensors (tinyattn kept tuples and NumPy scalars)
    torch = _torch()
    samples = [(1, "a"), (2, "b")]
    convert = [np.float32(1.5), (np.int64(2), [np.arange(2)])]
    got = []
    for fw in (torch, ta):
        (batch,) = list(fw.utils.data.DataLoader(samples, batch_size=2))
        items = list(fw.utils.data.DataLoader(convert, batch_size=None))
        got.append((type(batch).__name__, type(batch[1]).__name__, batch[1],
                    type(items[0]).__name__, type(items[1]).__name__,
                    type(items[1][0]).__name__, float(items[0])))
    assert got[0] == got[1] == ("list", "tuple", ("a", "b"), "Tensor", "list", "Tensor", 1.5)


# ------------------------------------------------------------------------ autograd API
def test_autograd_grad_materialize_grads_and_autograd_backward_follow_torch():
    torch = _torch()
    got = []
    for fw in (torch, ta):
        x = fw.tensor([1.0, 2.0], requires_grad=True)
        w = fw.tensor([3.0, 4.0], requires_grad=True)
        gx, gw = fw.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
        with pytest.raises(ValueError):
            fw.autograd.grad((x * 2).sum(), [x, w], allow_unused=False, materialize_grads=True)
        a = fw.tensor([1.0, 2.0], requires_grad=True)
        shared = a * 3
        fw.autograd.backward([shared.sum(), (shared * shared).sum()])
        b = fw.tensor([1.0, 2.0], requires_grad=True)
        fw.autograd.backward(b * b, grad_tensors=fw.tensor([1.0, 0.5]))
        got.append([_np(gx), _np(gw), _np(a.grad), _np(b.grad)])
    for ours, theirs in zip(got[1], got[0]):
        np.testing.assert_allclose(ours, theirs)
    assert got[1][1].tolist() == [0.0, 0.0]


def test_autograd_error_types_follow_torch():
    # torch raises RuntimeError for both; tinyattn raised TypeError / ValueError (kept as
    # base classes, so both spellings catch them)
    with pytest.raises(RuntimeError):
        ta.ones(2, dtype=ta.int64).requires_grad_()
    with pytest.raises(TypeError):
        ta.ones(2, dtype=ta.int64).requires_grad_()
    x = ta.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).backward(ta.ones(3))
    with pytest.raises(ValueError):
        (x * 2).backward(ta.ones(3))


def test_reading_grad_of_a_non_leaf_warns_as_torch():
    torch = _torch()
    for fw in (torch, ta):
        x = fw.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.sum().backward(retain_graph=True)
        with pytest.warns(UserWarning, match="not a leaf Tensor"):
            assert y.grad is None
        z = x * 3
        z.retain_grad()
        z.sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("error")                      # negative controls
            assert z.grad is not None and x.grad is not None


# ------------------------------------------------------------------------ nn utilities
@pytest.mark.parametrize("max_norm,norm_type,grad", [
    (float("inf"), 2.0, [3.0, 4.0]),            # measure only: a common use
    (1.0, "inf", [3.0, 4.0]),                   # torch takes norm_type through float()
    (0.0, 2.0, [3.0, 4.0]),
    (1.0, 2.0, [float("nan"), 4.0]),
    (float("inf"), 2.0, [float("inf"), 4.0]),
])
def test_clip_grad_norm_arguments_follow_torch(max_norm, norm_type, grad):
    torch = _torch()
    got = []
    for fw in (torch, ta):
        p = fw.nn.Parameter(fw.tensor([1.0, 2.0]))
        p.grad = fw.tensor(grad)
        total = fw.nn.utils.clip_grad_norm_([p], max_norm, norm_type=norm_type, foreach=None)
        got.append((float(total), _np(p.grad)))
    np.testing.assert_allclose(got[1][0], got[0][0])
    np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-6)


def test_get_parameter_and_get_buffer_follow_torch():
    torch = _torch()
    for fw in (torch, ta):
        model = fw.nn.Sequential(fw.nn.Linear(2, 3), fw.nn.BatchNorm1d(3))
        assert tuple(model.get_parameter("0.bias").shape) == (3,)
        assert model.get_parameter("1.weight") is model[1].weight
        assert model.get_buffer("1.running_var") is model[1].running_var
        with pytest.raises(AttributeError):
            model.get_parameter("1.running_var")
        with pytest.raises(AttributeError):
            model.get_buffer("0.missing")


# ------------------------------------------------------------------------ error types
SHAPE_ERRORS = [
    ("reshape", lambda t, x: x.reshape(4, 2)),            # makemore part 5: view(-1, 1000)
    ("view", lambda t, x: x.view(-1, 4)),
    ("permute", lambda t, x: x.permute(0, 0)),
    ("stack empty", lambda t, x: t.stack([])),
    ("split 0", lambda t, x: x.split(0)),
    ("chunk 0", lambda t, x: x.chunk(0)),
    ("expand fewer", lambda t, x: x.expand(3)),
    ("expand size", lambda t, x: x.expand(4, 3)),
    ("repeat fewer", lambda t, x: x.repeat(2)),
    ("flip twice", lambda t, x: x.flip(0, 0)),
]


@pytest.mark.parametrize("name,call", SHAPE_ERRORS, ids=[c[0] for c in SHAPE_ERRORS])
def test_shape_errors_are_runtime_errors_as_torch(name, call):
    torch = _torch()
    with pytest.raises(RuntimeError):
        call(torch, torch.ones(2, 3))
    with pytest.raises(RuntimeError):
        call(ta, ta.ones(2, 3))
    if name != "expand size":   # a size that cannot grow: torch's broadcasting RuntimeError
        with pytest.raises(ValueError):                # what tinyattn raised stays caught
            call(ta, ta.ones(2, 3))                    # (broadcast_error.py), as every op's


# ------------------------------------------------------------------------ dtype/number probes
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_remainder_zero_has_the_sign_of_the_dividend_as_torch(dtype):
    # NumPy gives a zero the divisor's sign: 1.0 % -1.0 printed tensor([-0.]) here
    torch = _torch()
    values = [1.0, 0.0, 2.0, -1.0, -0.0, 3.5, -3.5, 5.0]
    for divisor in (-1.0, 1.0, 2.5, -2.5):
        ours = (ta.tensor(values, dtype=getattr(ta, dtype)) % divisor).float().numpy()
        theirs = (torch.tensor(values, dtype=getattr(torch, dtype)) % divisor).float().numpy()
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    assert repr(ta.tensor([1.0, 0.0]) % -1) == "tensor([0., 0.])"


def test_integer_to_negative_power_is_a_runtime_error_as_torch():
    torch = _torch()
    with pytest.raises(RuntimeError):
        torch.tensor([1, 2]) ** -1
    with pytest.raises(RuntimeError):
        ta.tensor([1, 2]) ** -1
    assert (ta.tensor([1, 2]) ** 2).tolist() == [1, 4]          # negative control


# ------------------------------------------------------------------------ torch.save/load
def test_saved_size_dtype_and_device_load_in_torch_with_weights_only(tmp_path):
    # a checkpoint holding x.shape, a dtype or a device (run-torch's objects) was refused by
    # torch.load's weights_only default, and by tinyattn's own load
    torch = _torch()
    from tinyattn.io.torch_file import load_torch, save_torch     # run-torch's save/load
    from tinyattn.torch_shim.shim_names import device, dtype
    path = str(tmp_path / "meta.pt")
    save_torch({"shape": ta.zeros(2, 3).shape, "dtype": dtype("float16"),
             "device": device("cpu"), "t": ta.arange(3)}, path)
    theirs = torch.load(path)
    assert theirs["shape"] == torch.Size([2, 3]) and isinstance(theirs["shape"], torch.Size)
    assert theirs["dtype"] is torch.float16 and theirs["device"] == torch.device("cpu")
    ours = load_torch(path)
    assert repr(ours["shape"]) == repr(ta.zeros(2, 3).shape)        # a Size, not a tuple
    assert ours["dtype"] == "float16" and ours["device"] == "cpu"
    assert ours["t"].tolist() == [0, 1, 2]


# ------------------------------------------------------------------------ outside programs
def _backprop_ninja_chain(fw, arrays):
    """The calling pattern of nn-zero-to-hero's makemore part 4 ("becoming a backprop
    ninja"), self-written: an MLP with a hand-written batch norm, every intermediate kept
    with retain_grad(), the loss through logsumexp-style steps and fancy indexing."""
    C, W1, b1, W2, b2, gain, bias = (fw.tensor(a, requires_grad=True) for a in arrays[:7])
    X, Y = fw.tensor(arrays[7]), fw.tensor(arrays[8])
    n = X.shape[0]
    emb = C[X]
    embcat = emb.view(emb.shape[0], -1)
    hprebn = embcat @ W1 + b1
    bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff ** 2
    bnvar = 1 / (n - 1) * bndiff2.sum(0, keepdim=True)
    bnvar_inv = (bnvar + 1e-5) ** -0.5
    bnraw = bndiff * bnvar_inv
    hpreact = gain * bnraw + bias
    h = fw.tanh(hpreact)
    logits = h @ W2 + b2
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum ** -1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Y].mean()
    kept = [logprobs, probs, counts, counts_sum, counts_sum_inv, norm_logits, logit_maxes,
            logits, h, hpreact, bnraw, bnvar_inv, bnvar, bndiff2, bndiff, hprebn, bnmeani,
            embcat, emb]
    for t in kept:
        t.retain_grad()
    loss.backward()
    return [loss.item()] + [_np(t.grad) for t in kept + [C, W1, b1, W2, b2, gain, bias]]


def test_makemore_backprop_ninja_pattern_matches_torch():
    torch = _torch()
    rng = np.random.default_rng(0)
    vocab, emb_dim, block, hidden, n = 7, 3, 3, 16, 12
    arrays = [rng.standard_normal(s).astype(np.float32) * scale for s, scale in [
        ((vocab, emb_dim), 1.0), ((emb_dim * block, hidden), 0.3), ((hidden,), 0.1),
        ((hidden, vocab), 0.1), ((vocab,), 0.1), ((1, hidden), 0.1), ((1, hidden), 0.1)]]
    arrays[5] += 1.0
    arrays += [rng.integers(0, vocab, (n, block)), rng.integers(0, vocab, n)]
    ours, theirs = _backprop_ninja_chain(ta, arrays), _backprop_ninja_chain(torch, arrays)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    assert len(ours) == len(theirs) == 27
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=1e-6)


def test_grad_fn_next_functions_walk_the_graph_as_torch():
    # PyTorch's autograd tutorial walks loss.grad_fn.next_functions[0][0]...; it was an
    # AttributeError here
    torch = _torch()
    walks = []
    for fw in (torch, ta):
        w = fw.tensor([1.0, 2.0], requires_grad=True)
        x = fw.tensor([3.0, 4.0])
        y = (w * x).sum() + w.exp().mean()
        first = y.grad_fn.next_functions
        total = first[0][0]
        mul = total.next_functions[0][0]
        leaf = mul.next_functions[0][0]
        walks.append(([f.name() for f, _ in first], total.name(), mul.name(),
                      type(leaf).__name__, leaf.variable is w, leaf.next_functions,
                      [i for _, i in first]))
    assert walks[0] == walks[1]


def test_small_tensor_protocol_habits_follow_torch():
    # x.type() printed "cpu:float32"; split/chunk gave lists (printed [..] where torch
    # prints (..)); `v in x` raised; `x == None` gave a tensor (torch: False)
    torch = _torch()
    got = []
    for fw in (torch, ta):
        x = fw.arange(6.0).reshape(2, 3)
        got.append((x.type(), fw.arange(3).type(), fw.zeros(1, dtype=fw.bool).type(),
                    type(x.split(1)).__name__, type(fw.arange(5).chunk(2)).__name__,
                    3.0 in x, 7 in x, fw.tensor(4.0) in x, x == None, x != None))  # noqa: E711
    assert got[0] == got[1]
    assert got[1][:3] == ("torch.FloatTensor", "torch.LongTensor", "torch.BoolTensor")
