"""Transformer encoder/decoder layers: torch parity (both norm_first settings, masks) of the
outputs and of every input and parameter gradient, and float64 gradchecks."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.nn.torch_compat import convert_torch_state_dict

B, S, S_M, D, H, FF = 2, 4, 3, 8, 2, 12


def _randomize_torch(module, torch):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.4)


def _compare_grads(ours, theirs, ours_inputs, theirs_inputs):
    for o, t in zip(ours_inputs, theirs_inputs):
        np.testing.assert_allclose(o.grad, t.grad.numpy(), atol=1e-10, rtol=0)
    tg = convert_torch_state_dict({n: p.grad for n, p in theirs.named_parameters()})
    og = {n: p.grad for n, p in ours.named_parameters()}
    assert set(tg) == set(og)
    for name in og:
        np.testing.assert_allclose(og[name], tg[name], atol=1e-10, rtol=0, err_msg=name)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, activation):
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation,
                                          norm_first=norm_first, batch_first=True,
                                          dtype=torch.float64)
    _randomize_torch(tl, torch)
    ours = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation,
                                      norm_first=norm_first).double()
    ours.load_state_dict(convert_torch_state_dict(tl.state_dict()))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((B, S, D))
    causal = np.tril(np.ones((S, S), bool))
    pad = np.arange(S)[None, :] < np.array([[S], [2]])
    tx = torch.tensor(x, requires_grad=True)
    t_out = tl(tx, src_mask=torch.tensor(~causal), src_key_padding_mask=torch.tensor(~pad))
    ox = ta.tensor(x, dtype="float64", requires_grad=True)
    o_out = ours(ox, src_padding_mask=pad, is_causal=True)
    g = rng.standard_normal(t_out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (o_out * ta.tensor(g, dtype="float64")).sum().backward()
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10, rtol=0)
    _compare_grads(ours, tl, [ox], [tx])


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first):
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first,
                                          batch_first=True, dtype=torch.float64)
    _randomize_torch(tl, torch)
    ours = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first).double()
    ours.load_state_dict(convert_torch_state_dict(tl.state_dict()))
    rng = np.random.default_rng(2)
    tgt, mem = rng.standard_normal((B, S, D)), rng.standard_normal((B, S_M, D))
    causal = np.tril(np.ones((S, S), bool))
    mem_pad = np.arange(S_M)[None, :] < np.array([[S_M], [1]])
    tgt_pad = np.arange(S)[None, :] < np.array([[3], [S]])
    tt, tm = (torch.tensor(a, requires_grad=True) for a in (tgt, mem))
    t_out = tl(tt, tm, tgt_mask=torch.tensor(~causal),
               tgt_key_padding_mask=torch.tensor(~tgt_pad),
               memory_key_padding_mask=torch.tensor(~mem_pad))
    ot, om = (ta.tensor(a, dtype="float64", requires_grad=True) for a in (tgt, mem))
    o_out = ours(ot, om, tgt_padding_mask=tgt_pad, memory_padding_mask=mem_pad)
    g = rng.standard_normal(t_out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (o_out * ta.tensor(g, dtype="float64")).sum().backward()
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10, rtol=0)
    _compare_grads(ours, tl, [ot, om], [tt, tm])


def test_decoder_parity_negative_control_without_causal_mask():
    """Our decoder is causal by default; with tgt_is_causal=False it must differ from torch's
    causal result (so the parity above really depends on the mask)."""
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                          dtype=torch.float64)
    _randomize_torch(tl, torch)
    ours = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0).double()
    ours.load_state_dict(convert_torch_state_dict(tl.state_dict()))
    rng = np.random.default_rng(3)
    tgt, mem = rng.standard_normal((B, S, D)), rng.standard_normal((B, S_M, D))
    causal = torch.tensor(~np.tril(np.ones((S, S), bool)))
    t_out = tl(torch.tensor(tgt), torch.tensor(mem), tgt_mask=causal).detach().numpy()
    o_tgt, o_mem = ta.tensor(tgt, dtype="float64"), ta.tensor(mem, dtype="float64")
    np.testing.assert_allclose(ours(o_tgt, o_mem).numpy(), t_out, atol=1e-10)
    assert np.abs(ours(o_tgt, o_mem, tgt_is_causal=False).numpy() - t_out).max() > 1e-3


def _small(layer):
    rng = np.random.default_rng(7)
    for p in layer.parameters():
        p.data = rng.standard_normal(p.shape) * 0.5
    return layer


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_gradcheck(norm_first):
    ta.manual_seed(0)
    layer = _small(nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu",
                                              norm_first=norm_first).double())
    x = ta.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), dtype="float64",
                  requires_grad=True)
    pad = np.array([[True, True, False], [True, True, True]])
    assert ta.gradcheck(lambda *_: layer(x, src_padding_mask=pad),
                        [x, *layer.parameters()])


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_gradcheck(norm_first):
    ta.manual_seed(0)
    layer = _small(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0,
                                              norm_first=norm_first).double())
    rng = np.random.default_rng(1)
    tgt = ta.tensor(rng.standard_normal((1, 3, 4)), dtype="float64", requires_grad=True)
    mem = ta.tensor(rng.standard_normal((1, 2, 4)), dtype="float64", requires_grad=True)
    assert ta.gradcheck(lambda *_: layer(tgt, mem), [tgt, mem, *layer.parameters()],
                        fast=True)


def test_layers_in_train_mode_use_dropout_and_eval_removes_it():
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5)
    x = ta.randn(1, 3, 4)
    a, b = layer(x).numpy(), layer(x).numpy()
    assert not np.allclose(a, b)
    layer.eval()
    assert np.array_equal(layer(x).numpy(), layer(x).numpy())
