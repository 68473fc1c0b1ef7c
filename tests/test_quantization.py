"""Dynamic int8 quantization: torch's weights, scales and zero points; outputs within one
quantization step of torch's quantize_dynamic; print, size, copies."""
from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn
from tinyattn.quantization import (DynamicQuantizedLinear, choose_qparams, quantize_dynamic,
                                   quantize_weight)

RNG = np.random.default_rng(0)


def _model():
    ta.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 5))


def _inputs():
    yield "normal", RNG.standard_normal((7, 16)).astype(np.float32) * 3
    yield "positive", RNG.random((3, 4, 16)).astype(np.float32) + 0.5
    yield "negative", -RNG.random((5, 16)).astype(np.float32) * 10
    yield "zeros", np.zeros((2, 16), np.float32)
    yield "wide", (RNG.standard_normal((6, 16)) * np.logspace(-3, 3, 16)).astype(np.float32)


def _torch_copy(torch, model):
    layers = [torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5)]
    with torch.no_grad():
        for ours, theirs in zip(model, layers):
            if isinstance(ours, nn.Linear):
                theirs.weight.copy_(torch.tensor(ours.weight.numpy()))
                theirs.bias.copy_(torch.tensor(ours.bias.numpy()))
    return torch.nn.Sequential(*layers)


def _torch_quantized(torch, model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(_torch_copy(torch, model),
                                                      {torch.nn.Linear}, dtype=torch.qint8)


def test_weights_scale_and_zero_point_are_torchs():
    torch = pytest.importorskip("torch")
    model = _model()
    ours, theirs = quantize_dynamic(model, {nn.Linear}, dtype=ta.qint8), \
        _torch_quantized(torch, model)
    for i in (0, 2):
        weight = theirs[i].weight()
        np.testing.assert_array_equal(ours[i].weight.numpy(), weight.int_repr().numpy())
        assert ours[i].scale.item() == weight.q_scale()
        assert ours[i].zero_point.item() == weight.q_zero_point() == 0


@pytest.mark.parametrize("reduce_range", [True, False])
def test_activation_qparams_are_torchs(reduce_range):
    torch = pytest.importorskip("torch")
    for _, x in _inputs():
        theirs = torch._choose_qparams_per_tensor(torch.tensor(x), reduce_range)
        ours = choose_qparams(float(x.min()), float(x.max()), reduce_range)
        assert ours[1] == theirs[1]
        assert ours[0] == pytest.approx(theirs[0], rel=1e-6)


def test_outputs_within_one_quantization_step_of_torch():
    torch = pytest.importorskip("torch")
    if torch.backends.quantized.engine not in ("x86", "fbgemm"):
        pytest.skip(f"torch's quantized engine here is {torch.backends.quantized.engine}")
    model = _model()
    ours, theirs = quantize_dynamic(model), _torch_quantized(torch, model)
    first = ours[0]
    for name, x in _inputs():
        scale, _ = choose_qparams(float(x.min()), float(x.max()), first.reduce_range)
        step = scale * first.scale.item()     # one unit of the int32 sum, in output units
        got = first(ta.tensor(x)).numpy()
        want = theirs[0](torch.tensor(x)).numpy()
        assert np.abs(got - want).max() <= step, name
        np.testing.assert_allclose(ours(ta.tensor(x)).numpy(),
                                   theirs(torch.tensor(x)).numpy(), atol=1e-4, rtol=1e-4)


def test_output_equals_the_integer_formula_and_is_close_to_float():
    model = _model()
    layer = DynamicQuantizedLinear.from_float(model[0])
    x = RNG.standard_normal((9, 16)).astype(np.float32)
    scale, zero = choose_qparams(float(x.min()), float(x.max()), layer.reduce_range)
    q_max = 127 if layer.reduce_range else 255
    q_x = np.clip(np.rint(x / np.float32(scale)) + zero, 0, q_max).astype(np.int64)
    acc = (q_x - zero) @ layer.weight.numpy().astype(np.int64).T
    expected = acc * (scale * layer.scale.item()) + model[0].bias.numpy()
    np.testing.assert_allclose(layer(ta.tensor(x)).numpy(), expected, rtol=1e-6, atol=1e-6)
    exact = model[0](ta.tensor(x)).detach().numpy()
    # each product's error: |x| s_w / 2 + |w| s_x / 2 (rounding both), summed over 16 inputs
    bound = 16 * (np.abs(x).max() * layer.scale.item() + np.abs(model[0].weight.numpy()).max()
                  * scale) / 2
    assert np.abs(layer(ta.tensor(x)).numpy() - exact).max() <= bound
    assert np.abs(layer(ta.tensor(x)).numpy() - exact).max() > 0     # it did quantize


def test_weight_rounding_and_symmetric_range():
    w = np.array([[-1.0, 0.5], [0.25, 0.999]], np.float32)
    q, scale = quantize_weight(w)
    assert scale == pytest.approx(1.0 / 127.5)
    # 1 / s_w in float32 is just below 127.5, so -1 rounds to -127, in torch too
    np.testing.assert_array_equal(q, [[-127, 64], [32, 127]])


def test_print_copy_inplace_and_size(tmp_path):
    model = _model()
    quantized = quantize_dynamic(model, {nn.Linear}, dtype=ta.qint8)
    assert isinstance(model[0], nn.Linear)                     # the original is untouched
    text = repr(quantized)
    assert "(0): DynamicQuantizedLinear(in_features=16, out_features=32, dtype=torch.qint8, " \
           "qscheme=torch.per_tensor_affine)" in text
    assert "(1): ReLU()" in text
    ta.save(model.state_dict(), str(tmp_path / "float.pt"))
    ta.save(quantized.state_dict(), str(tmp_path / "int8.pt"))
    weights = sum(p.numel() for n, p in model.named_parameters() if n.endswith("weight"))
    saved = os.path.getsize(tmp_path / "float.pt") - os.path.getsize(tmp_path / "int8.pt")
    assert saved >= 3 * weights - 2048                         # 4 bytes -> 1 per weight
    same = quantize_dynamic(model, inplace=True)
    assert same is model and isinstance(model[2], DynamicQuantizedLinear)


def test_quantized_gpt_predicts_like_the_float_one():
    ta.manual_seed(0)
    gpt = nn.GPT(nn.GPTConfig(vocab_size=20, block_size=8, n_layer=2, n_head=2, d_model=32))
    idx = ta.tensor(RNG.integers(0, 20, (4, 8)))
    quantized = quantize_dynamic(gpt, {nn.Linear})
    assert any(isinstance(m, DynamicQuantizedLinear) for m in quantized.modules())
    with ta.no_grad():
        a, b = gpt(idx).numpy(), quantized(idx).numpy()
    assert np.abs(a - b).max() < 0.05 * np.abs(a).max()


def test_multihead_attention_out_proj_stays_float_as_in_torch():
    mha = nn.MultiheadAttention(8, 2)
    model = nn.Sequential(nn.Linear(8, 8))
    model.attn = mha
    quantized = quantize_dynamic(model)
    assert isinstance(quantized[0], DynamicQuantizedLinear)
    from tinyattn.nn.layers import NonDynamicallyQuantizableLinear
    assert type(quantized.attn.out_proj) is NonDynamicallyQuantizableLinear


def test_refusals():
    with pytest.raises(ValueError, match="qint8"):
        quantize_dynamic(_model(), {nn.Linear}, dtype="float16")
    model = quantize_dynamic(_model(), {nn.LayerNorm})     # skipped, as torch skips it
    assert isinstance(model[0], nn.Linear)
    lstm = type("LSTM", (nn.Module,), {})
    with pytest.raises(ValueError, match="Linear layers only"):
        quantize_dynamic(_model(), {nn.Linear, lstm})
    layer = DynamicQuantizedLinear.from_float(nn.Linear(4, 2))
    with pytest.raises(ValueError, match="in_features=4"):
        layer(ta.ones(3, 5))


def test_run_torch_quantize_dynamic(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import torch\n"
        "model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU())\n"
        "q = torch.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)\n"
        "print(q)\n"
        "q2 = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, "
        "dtype=torch.qint8)\n"
        "print(q2(torch.ones(2, 4)).shape)\n")
    done = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "DynamicQuantizedLinear(in_features=4, out_features=3, dtype=torch.qint8" in \
        done.stdout
    assert "torch.Size([2, 3])" in done.stdout          # as torch prints a shape


def test_example_runs_quick(capsys):
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "quantize.py"
    spec = importlib.util.spec_from_file_location("quantize_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--quick"])
    assert result["float accuracy"] > 0.9 and result["int8 accuracy"] > 0.9
    assert result["int8 bytes"] < result["float bytes"]
    assert "DynamicQuantizedLinear(in_features=32, out_features=64" in capsys.readouterr().out
