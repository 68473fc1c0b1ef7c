"""Gradient checkpointing (tinyattn.utils.checkpoint): gradients bit for bit equal to the plain
ones, the random state replayed, the graph not kept, torch's warnings and errors."""
from __future__ import annotations

import re
import tracemalloc
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn
from tinyattn.utils.checkpoint import CheckpointFunction, checkpoint, checkpoint_sequential


def _mlp(dropout: float = 0.3, dtype: str = "float32"):
    ta.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Dropout(dropout), nn.Linear(12, 12),
                         nn.LayerNorm(12), nn.Dropout(dropout), nn.Linear(12, 5)).to(dtype=dtype)


def _grads(model, x):
    return [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]


def _zero(model, x):
    x.grad = None
    for p in model.parameters():
        p.grad = None


def _run(model, x, segment, seed=3):
    _zero(model, x)
    ta.manual_seed(seed)
    out = segment(x)
    (out * ta.arange(out.numel()).reshape(out.shape).float().cos()).sum().backward()
    return out.detach().numpy().copy(), _grads(model, x), ta.get_rng_state()["cpu"]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_gradients_equal_plain_bit_for_bit_with_dropout(use_reentrant):
    model = _mlp()
    x = ta.randn(4, 6, requires_grad=True)
    plain = _run(model, x, model)
    ckpt = _run(model, x, lambda t: checkpoint(model, t, use_reentrant=use_reentrant))
    np.testing.assert_array_equal(ckpt[0], plain[0])
    for a, b in zip(ckpt[1], plain[1]):
        np.testing.assert_array_equal(a, b)
    assert ckpt[2] == plain[2]              # the replay left the random state where it was


def test_without_rng_replay_the_masks_differ():
    """Negative control: preserve_rng_state=False recomputes with new dropout masks, so the
    gradients are those of other masks (the comparison above can fail)."""
    model = _mlp()
    x = ta.randn(4, 6, requires_grad=True)
    plain = _run(model, x, model)
    loose = _run(model, x, lambda t: checkpoint(model, t, use_reentrant=False,
                                                 preserve_rng_state=False))
    np.testing.assert_array_equal(loose[0], plain[0])          # the forward is the same
    assert not np.array_equal(loose[1][1], plain[1][1])


def test_forward_keeps_only_the_segment_inputs():
    model = _mlp(0.0)
    x = ta.randn(4, 6, requires_grad=True)
    out = checkpoint(model, x, use_reentrant=False)
    node = out.grad_fn
    assert isinstance(node, CheckpointFunction)
    params = list(model.parameters())
    assert list(node.inputs) == [x] + params          # outer inputs, in first-use order
    assert all(p is None for p in node.parents[1:]) and node.parents[0] is x.grad_fn


def _held_bytes(n_layer, checkpointing):
    ta.manual_seed(0)
    config = nn.GPTConfig(vocab_size=40, block_size=32, n_layer=n_layer, n_head=2, d_model=32,
                          gradient_checkpointing=checkpointing)
    model = nn.GPT(config)
    idx = ta.tensor(np.random.default_rng(0).integers(0, 40, (8, 32)))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    _, loss = model(idx, idx)
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held


def test_gpt_holds_much_less_after_the_forward():
    """A checkpointed forward keeps the blocks' inputs, not their insides. Since the engine
    frees intermediates no backward saved (speed34b), the plain forward holds less too, so the
    ratio is about 0.34; a warm-up run first keeps one-time allocations (caches filled on
    first use) out of either figure."""
    _held_bytes(4, True)
    plain, ckpt = _held_bytes(4, False), _held_bytes(4, True)
    assert ckpt < 0.4 * plain, (ckpt, plain)


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_gpt_gradient_checkpointing_equals_plain(dropout):
    def step(checkpointing):
        ta.manual_seed(0)
        model = nn.GPT(nn.GPTConfig(vocab_size=30, block_size=12, n_layer=3, n_head=2,
                                    d_model=16, dropout=dropout,
                                    gradient_checkpointing=checkpointing))
        idx = ta.tensor(np.random.default_rng(1).integers(0, 30, (3, 12)))
        ta.manual_seed(7)
        logits, loss = model(idx, idx)
        loss.backward()
        return loss.item(), [p.grad.numpy().copy() for p in model.parameters()], logits
    plain, ckpt = step(False), step(True)
    assert ckpt[0] == plain[0]
    for a, b in zip(ckpt[1], plain[1]):
        np.testing.assert_array_equal(a, b)


def test_gpt_checkpoints_only_when_training_with_grad():
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=10, block_size=4, n_layer=2, n_head=1, d_model=8,
                                gradient_checkpointing=True))
    idx = ta.tensor([[1, 2, 3]])
    first_block_output = []
    last_forward = model.blocks[1].forward
    model.blocks[1].forward = lambda x, *args, **kwargs: (first_block_output.append(x),
                                                          last_forward(x, *args, **kwargs))[1]
    model.trunk(idx)
    assert isinstance(first_block_output[-1].grad_fn, CheckpointFunction)
    model.eval()
    model.trunk(idx)
    assert not isinstance(first_block_output[-1].grad_fn, CheckpointFunction)


def test_autograd_grad_and_keyword_arguments_without_reentrant():
    ta.manual_seed(0)
    lin = nn.Linear(3, 3)
    x = ta.randn(2, 3, requires_grad=True)

    def segment(t, scale=1.0):
        return ta.tanh(lin(t)) * scale
    plain = ta.autograd.grad(segment(x, scale=2.0).sum(), [x, lin.weight])
    out = checkpoint(segment, x, use_reentrant=False, scale=2.0)
    ckpt = ta.autograd.grad(out.sum(), [x, lin.weight])
    for a, b in zip(ckpt, plain):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_segment_with_several_outputs_and_nesting():
    ta.manual_seed(0)
    a_lin, b_lin = nn.Linear(4, 4), nn.Linear(4, 2)
    x = ta.randn(3, 4, requires_grad=True)

    def inner(t):
        return ta.relu(a_lin(t))

    def segment(t, nested):
        h = checkpoint(inner, t, use_reentrant=False) if nested else inner(t)
        return h, b_lin(h).sigmoid()

    def grads(run, only_second):
        for p in [x, a_lin.weight, a_lin.bias, b_lin.weight]:
            p.grad = None
        h, y = run(x)
        loss = y.sum() if only_second else (h * h).sum() + y.sum()
        loss.backward()
        return [p.grad.numpy().copy() for p in [x, a_lin.weight, a_lin.bias, b_lin.weight]]
    for only_second in (False, True):
        plain = grads(lambda t: segment(t, False), only_second)
        for nested in (False, True):
            ckpt = grads(lambda t: checkpoint(segment, t, nested, use_reentrant=False),
                         only_second)
            for got, want in zip(ckpt, plain):
                np.testing.assert_array_equal(got, want)


def test_checkpoint_sequential_equals_plain():
    model = _mlp(0.2)
    x = ta.randn(5, 6, requires_grad=True)
    plain = _run(model, x, model)
    for segments in (1, 2, 3, 7):
        got = _run(model, x, lambda t: checkpoint_sequential(model, segments, t,
                                                             use_reentrant=False))
        for a, b in zip(got[1], plain[1]):
            np.testing.assert_array_equal(a, b)


def test_in_place_change_before_backward_is_refused():
    ta.manual_seed(0)
    lin = nn.Linear(3, 3)
    x = ta.randn(2, 3, requires_grad=True)
    out = checkpoint(lin, x, use_reentrant=False)
    with ta.no_grad():
        lin.weight.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_second_backward_needs_retain_graph():
    ta.manual_seed(0)
    lin = nn.Linear(3, 3)
    x = ta.randn(2, 3, requires_grad=True)
    out = checkpoint(lin, x, use_reentrant=False).sum()
    out.backward(retain_graph=True)
    first = lin.weight.grad.numpy().copy()
    out.backward()
    np.testing.assert_array_equal(lin.weight.grad.numpy(), 2 * first)
    with pytest.raises(RuntimeError, match="second time"):
        out.backward()


def _norm(text):
    return re.sub(r"\s+", " ", str(text)).strip()


def test_warnings_and_errors_are_torchs():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as torch_checkpoint
    lin_t = torch.nn.Linear(2, 2)
    lin = nn.Linear(2, 2)
    cases = [
        (lambda: torch_checkpoint.checkpoint(lin_t, torch.ones(1, 2, requires_grad=True)),
         lambda: checkpoint(lin, ta.ones(1, 2, requires_grad=True))),
        (lambda: torch_checkpoint.checkpoint(lin_t, torch.ones(1, 2), use_reentrant=True),
         lambda: checkpoint(lin, ta.ones(1, 2), use_reentrant=True)),
        (lambda: torch_checkpoint.checkpoint_sequential([lin_t], 1, torch.ones(1, 2)),
         lambda: checkpoint_sequential([lin], 1, ta.ones(1, 2))),
    ]
    for torch_call, our_call in cases:
        with warnings.catch_warnings(record=True) as theirs:
            warnings.simplefilter("always")
            torch_out = torch_call()
        with warnings.catch_warnings(record=True) as ours:
            warnings.simplefilter("always")
            our_out = our_call()
        assert [_norm(w.message) for w in ours] == [_norm(w.message) for w in theirs]
        assert our_out.requires_grad == torch_out.requires_grad
    with pytest.raises(ValueError) as theirs:
        torch_checkpoint.checkpoint(lin_t, torch.ones(1, 2), use_reentrant=True, a=1, b=2)
    with pytest.raises(ValueError) as ours:
        checkpoint(lin, ta.ones(1, 2), use_reentrant=True, a=1, b=2)
    assert _norm(ours.value) == _norm(theirs.value)


def test_gradients_match_torch_checkpoint():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as torch_checkpoint
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((8, 5)), rng.standard_normal((3, 8))
    x0 = rng.standard_normal((4, 5))
    lin1, lin2 = nn.Linear(5, 8, dtype="float64"), nn.Linear(8, 3, bias=False, dtype="float64")
    lin1.weight.data[...] = w1
    lin2.weight.data[...] = w2
    lin1.bias.data[...] = 0.1
    t1, t2 = torch.nn.Linear(5, 8).double(), torch.nn.Linear(8, 3, bias=False).double()
    with torch.no_grad():
        t1.weight.copy_(torch.tensor(w1))
        t2.weight.copy_(torch.tensor(w2))
        t1.bias.fill_(0.1)
    x = ta.tensor(x0, requires_grad=True)
    xt = torch.tensor(x0, requires_grad=True)
    checkpoint(lambda t: lin2(ta.tanh(lin1(t))), x, use_reentrant=False).square().sum() \
        .backward()
    torch_checkpoint.checkpoint(lambda t: t2(torch.tanh(t1(t))), xt,
                                use_reentrant=False).square().sum().backward()
    for ours, theirs in [(x, xt), (lin1.weight, t1.weight), (lin1.bias, t1.bias),
                         (lin2.weight, t2.weight)]:
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12,
                                   atol=1e-12)


def test_example_runs_quick(capsys):
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "checkpointing.py"
    spec = importlib.util.spec_from_file_location("checkpointing_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--quick"])
    assert result["same"] and result["ratio"] < 0.6
    assert "bit for bit: True" in capsys.readouterr().out


def test_gradcheck_float64_through_a_checkpoint():
    ta.manual_seed(0)
    lin = nn.Linear(3, 4, dtype="float64")
    x = ta.randn(2, 3, dtype="float64", requires_grad=True)
    assert ta.gradcheck(lambda t, w: checkpoint(lambda u: ta.tanh(lin(u) * w.sum()), t,
                                                 use_reentrant=False), [x, lin.weight])


def test_train_cli_checkpointing_trains_the_same_model(tmp_path, monkeypatch):
    """--checkpointing changes memory, not numbers: the same losses as a plain run. Both runs
    go through the command line's entry point in this process (what `python -m tinyattn
    train` calls); the pictures are not drawn (the numbers are what is compared)."""
    import json
    from tinyattn.cli import main
    monkeypatch.setattr("tinyattn.train.plots.have_matplotlib", lambda: False)
    losses = []
    for flags in ([], ["--checkpointing"]):
        out = tmp_path / ("run" + "".join(flags))
        assert main(["train", "--steps", "2", "--eval-every", "2", "--dropout", "0.1",
                     "--quiet", "--out", str(out)] + flags) == 0
        metrics = json.loads((out / "metrics.json").read_text())
        losses.append((metrics["final_train_loss"], metrics["final_val_loss"]))
    assert losses[0] == losses[1]


def test_train_flag_reaches_the_model():
    from tinyattn.train.cli import build_parser
    from tinyattn.train.config import TrainConfig
    from tinyattn.train.loop import _model_for
    assert build_parser().parse_args(["--checkpointing"]).checkpointing is True
    assert build_parser().parse_args([]).checkpointing is None
    model = _model_for(TrainConfig(checkpointing=True), vocab_size=13, block_size=17)
    assert model.config.gradient_checkpointing


def test_dropout_on_a_device_whose_state_is_not_saved_is_refused(monkeypatch):
    """On CUDA, CuPy's generator state cannot be saved: replaying dropout is impossible, so a
    checkpointed segment that draws there is refused (simulated here on the CPU)."""
    import tinyattn.utils.checkpoint as checkpoint_module
    monkeypatch.setattr(checkpoint_module, "_state_is_saved", lambda device: False)
    model = _mlp(0.3)
    x = ta.randn(2, 6, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot save"):
        checkpoint(model, x, use_reentrant=False)
    checkpoint(model, x, use_reentrant=False, preserve_rng_state=False).sum().backward()
    checkpoint(_mlp(0.0), x, use_reentrant=False)          # no draws: nothing to replay
    q = ta.randn(1, 2, 4, 3, requires_grad=True)
    checkpoint(lambda t: F.scaled_dot_product_attention(t, t, t), q, use_reentrant=False)


def test_the_recomputation_runs_under_the_forwards_autocast():
    """As torch's checkpoint: a segment run inside autocast is recomputed with the same casts
    (bfloat16 matmuls), even though backward() runs outside the autocast block, so the
    gradients are those of the plain autocast step, bit for bit. Without the replay the
    recomputed matmul would run in float32 and the gradients would differ."""
    ta.manual_seed(0)
    layer = ta.nn.Linear(8, 8)
    x = ta.randn(4, 8, requires_grad=True)

    def step(use_checkpoint):
        for p in (layer.weight, layer.bias, x):
            p.grad = None
        with ta.autocast("cpu", dtype="bfloat16"):
            h = checkpoint(layer, x, use_reentrant=False) if use_checkpoint else layer(x)
        h.float().pow(2).sum().backward()
        return [p.grad.numpy().copy() for p in (layer.weight, layer.bias, x)]

    for plain, checkpointed in zip(step(False), step(True)):
        np.testing.assert_array_equal(plain, checkpointed)
    with ta.autocast("cpu", dtype="bfloat16"):
        h = layer(x)
    with ta.autocast("cpu", enabled=False):
        float32 = layer(x)
    assert h.dtype != float32.dtype          # the negative control: the casts do matter
