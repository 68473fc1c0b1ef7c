"""Transformer layers and stacks with PyTorch's signatures: torch state dicts load as they
are, outputs and every input and parameter gradient match torch in both layouts and both
norm_first settings with PyTorch's mask conventions, float64 gradchecks, and the old tinyattn
names give errors that explain the change."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn

B, S, S_M, D, H, FF = 2, 4, 3, 8, 2, 12


def _randomize_torch(module, torch):
    torch.manual_seed(0)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * 0.4)


def _load(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours


def _compare_grads(ours, theirs, ours_inputs, theirs_inputs):
    for o, t in zip(ours_inputs, theirs_inputs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), atol=1e-10, rtol=0)
    tg = {n: p.grad.numpy() for n, p in theirs.named_parameters()}
    og = {n: p.grad.numpy() for n, p in ours.named_parameters()}
    assert set(tg) == set(og)
    for name in og:
        np.testing.assert_allclose(og[name], tg[name], atol=1e-10, rtol=0, err_msg=name)


def _layout(a, batch_first):
    return a if batch_first else np.swapaxes(a, 0, 1)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, activation, batch_first):
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation,
                                          norm_first=norm_first, batch_first=batch_first,
                                          dtype=torch.float64)
    _randomize_torch(tl, torch)
    ours = _load(nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, activation=activation,
                                            norm_first=norm_first,
                                            batch_first=batch_first).double(), tl)
    rng = np.random.default_rng(1)
    x = _layout(rng.standard_normal((B, S, D)), batch_first)
    banned = ~np.tril(np.ones((S, S), bool))                  # PyTorch: True = not allowed
    pad = np.arange(S)[None, :] >= np.array([[S], [2]])       # PyTorch: True = padding
    tx = torch.tensor(x, requires_grad=True)
    t_out = tl(tx, src_mask=torch.tensor(banned), src_key_padding_mask=torch.tensor(pad))
    ox = ta.tensor(x, requires_grad=True)
    o_out = ours(ox, src_mask=banned, src_key_padding_mask=pad)
    g = rng.standard_normal(t_out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (o_out * ta.tensor(g)).sum().backward()
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10, rtol=0)
    _compare_grads(ours, tl, [ox], [tx])


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first, batch_first):
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first,
                                          batch_first=batch_first, dtype=torch.float64)
    _randomize_torch(tl, torch)
    ours = _load(nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, norm_first=norm_first,
                                            batch_first=batch_first).double(), tl)
    rng = np.random.default_rng(2)
    tgt = _layout(rng.standard_normal((B, S, D)), batch_first)
    mem = _layout(rng.standard_normal((B, S_M, D)), batch_first)
    causal = nn.Transformer.generate_square_subsequent_mask(S, dtype="float64")  # float
    mem_pad = np.arange(S_M)[None, :] >= np.array([[S_M], [1]])
    tgt_pad = np.arange(S)[None, :] >= np.array([[3], [S]])
    tt, tm = (torch.tensor(a, requires_grad=True) for a in (tgt, mem))
    t_out = tl(tt, tm, tgt_mask=torch.tensor(causal.numpy()),
               tgt_key_padding_mask=torch.tensor(tgt_pad),
               memory_key_padding_mask=torch.tensor(mem_pad))
    ot, om = (ta.tensor(a, requires_grad=True) for a in (tgt, mem))
    o_out = ours(ot, om, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                 memory_key_padding_mask=mem_pad)
    g = rng.standard_normal(t_out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (o_out * ta.tensor(g)).sum().backward()
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10, rtol=0)
    _compare_grads(ours, tl, [ot, om], [tt, tm])


def test_whole_transformer_matches_torch_in_the_default_sequence_first_layout():
    torch = pytest.importorskip("torch")
    tm = torch.nn.Transformer(D, H, num_encoder_layers=2, num_decoder_layers=2,
                              dim_feedforward=FF, dropout=0.0, dtype=torch.float64)
    _randomize_torch(tm, torch)
    ours = _load(nn.Transformer(D, H, 2, 2, FF, dropout=0.0).double(), tm)
    rng = np.random.default_rng(4)
    src, tgt = rng.standard_normal((S_M, B, D)), rng.standard_normal((S, B, D))  # (S, N, E)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(S, dtype=torch.float64)
    np.testing.assert_array_equal(
        nn.Transformer.generate_square_subsequent_mask(S, dtype="float64").numpy(),
        mask.numpy())
    ts, tt = (torch.tensor(a, requires_grad=True) for a in (src, tgt))
    t_out = tm(ts, tt, tgt_mask=mask)
    os_, ot = (ta.tensor(a, requires_grad=True) for a in (src, tgt))
    o_out = ours(os_, ot, tgt_mask=mask.numpy())
    t_out.sum().backward()
    o_out.sum().backward()
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10, rtol=0)
    _compare_grads(ours, tm, [os_, ot], [ts, tt])


def test_sequence_first_layout_is_not_batch_first_negative_control():
    """The layout matters: feeding (N, S, E) to a batch_first=False layer treats the batch as
    positions, and attention then mixes the batch rows (a different result)."""
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0).double()
    x = np.random.default_rng(5).standard_normal((S, B, D))
    right = layer(ta.tensor(x)).numpy()
    swapped = layer(ta.tensor(np.swapaxes(x, 0, 1))).numpy()
    assert np.abs(np.swapaxes(swapped, 0, 1) - right).max() > 1e-3


def test_decoder_is_causal_only_when_asked_as_in_torch():
    torch = pytest.importorskip("torch")
    tl = torch.nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                          dtype=torch.float64)
    _randomize_torch(tl, torch)
    ours = _load(nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True).double(),
                 tl)
    rng = np.random.default_rng(3)
    tgt, mem = rng.standard_normal((B, S, D)), rng.standard_normal((B, S_M, D))
    o_tgt, o_mem = ta.tensor(tgt), ta.tensor(mem)
    t_free = tl(torch.tensor(tgt), torch.tensor(mem)).detach().numpy()
    np.testing.assert_allclose(ours(o_tgt, o_mem).numpy(), t_free, atol=1e-10)
    causal = ~np.tril(np.ones((S, S), bool))
    t_causal = tl(torch.tensor(tgt), torch.tensor(mem), tgt_mask=torch.tensor(causal))
    np.testing.assert_allclose(ours(o_tgt, o_mem, tgt_is_causal=True).numpy(),
                               t_causal.detach().numpy(), atol=1e-10)
    assert np.abs(t_free - t_causal.detach().numpy()).max() > 1e-3


def test_old_tinyattn_names_are_refused_with_the_new_meaning():
    with pytest.raises(TypeError, match="nhead"):
        nn.TransformerEncoderLayer(4, num_heads=2)
    layer = nn.TransformerEncoderLayer(4, 2, 8, batch_first=True)
    with pytest.raises(TypeError, match="True = padding"):
        layer(ta.randn(1, 3, 4), src_padding_mask=np.ones((1, 3), bool))


def _small(layer):
    rng = np.random.default_rng(7)
    for p in layer.parameters():
        p.data = rng.standard_normal(p.shape) * 0.5
    return layer


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_gradcheck(norm_first):
    ta.manual_seed(0)
    layer = _small(nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu",
                                              norm_first=norm_first, batch_first=True).double())
    x = ta.tensor(np.random.default_rng(0).standard_normal((2, 3, 4)), requires_grad=True)
    pad = np.array([[False, False, True], [False, False, False]])
    assert ta.gradcheck(lambda *_: layer(x, src_key_padding_mask=pad),
                        [x, *layer.parameters()])


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_gradcheck(norm_first):
    ta.manual_seed(0)
    layer = _small(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=norm_first,
                                              batch_first=True).double())
    rng = np.random.default_rng(1)
    tgt = ta.tensor(rng.standard_normal((1, 3, 4)), requires_grad=True)
    mem = ta.tensor(rng.standard_normal((1, 2, 4)), requires_grad=True)
    assert ta.gradcheck(lambda *_: layer(tgt, mem, tgt_is_causal=True),
                        [tgt, mem, *layer.parameters()], fast=True)


def test_layers_in_train_mode_use_dropout_and_eval_removes_it():
    ta.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 8, dropout=0.5)
    x = ta.randn(3, 1, 4)
    a, b = layer(x).numpy(), layer(x).numpy()
    assert not np.allclose(a, b)
    layer.eval()
    assert np.array_equal(layer(x).numpy(), layer(x).numpy())
