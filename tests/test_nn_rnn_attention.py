"""nn.AdditiveAttention (Bahdanau) and nn.LuongAttention (dot, general, concat): values and
every gradient against the same formulas written in torch from the same weights, masking by
valid_lens and key_padding_mask, the weights kept for the alignment picture, and errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

torch = pytest.importorskip("torch", reason="the attention formulas are checked in torch")
RNG = np.random.default_rng(14)
B, Q, K, DQ, DK, DV, HID = 2, 3, 5, 4, 6, 3, 7


def _torch_scores(module, q, k):
    """The papers' formulas, written directly in torch."""
    w = {name: torch.tensor(p.numpy(), requires_grad=True)
         for name, p in module.named_parameters()}
    if isinstance(module, nn.AdditiveAttention):
        feats = torch.tanh((q @ w["W_q.weight"].T)[:, :, None] + (k @ w["W_k.weight"].T)[:, None])
        return (feats @ w["w_v.weight"].T).squeeze(-1), w
    if module.score == "dot":
        scores = q @ k.transpose(1, 2)
    elif module.score == "general":
        scores = q @ (k @ w["W_a.weight"].T).transpose(1, 2)
    else:
        both = torch.cat([q[:, :, None].expand(-1, -1, K, -1),
                          k[:, None].expand(-1, Q, -1, -1)], dim=-1)     # (B, Q, K, dq + dk)
        scores = (torch.tanh(both @ w["W_a.weight"].T) @ w["w_v.weight"].T).squeeze(-1)
    if module.scale:
        scores = scores / math.sqrt(module.key_size)
    return scores, w


MODULES = {
    "additive": lambda: nn.AdditiveAttention(DK, DQ, HID),
    "dot": lambda: nn.LuongAttention(DK, DK, score="dot"),
    "dot-scaled": lambda: nn.LuongAttention(DK, DK, score="dot", scale=True),
    "general": lambda: nn.LuongAttention(DQ, DK, score="general"),
    "concat": lambda: nn.LuongAttention(DQ, DK, score="concat", num_hiddens=HID),
}


@pytest.mark.parametrize("name", sorted(MODULES))
@pytest.mark.parametrize("masking", ["none", "valid_lens", "key_padding_mask"])
def test_values_and_gradients_match_the_formula_in_torch(name, masking):
    module = MODULES[name]().double()
    d_q = DK if name.startswith("dot") else DQ
    arrays = [RNG.standard_normal(s) for s in ((B, Q, d_q), (B, K, DK), (B, K, DV))]
    ours = [ta.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    lens = [3, 5]
    pad = np.arange(K)[None, :] >= np.array(lens)[:, None]
    kwargs = {"none": {}, "valid_lens": {"valid_lens": ta.tensor(lens)},
              "key_padding_mask": {"key_padding_mask": ta.tensor(pad)}}[masking]
    out = module(*ours, **kwargs)
    scores, weights = _torch_scores(module, theirs[0], theirs[1])
    if masking != "none":
        scores = scores.masked_fill(torch.tensor(pad)[:, None, :], float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    expected = probs @ theirs[2]
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(module.attention_weights.numpy(), probs.detach().numpy(),
                               atol=1e-12)
    g = RNG.standard_normal(out.shape)
    (out * ta.tensor(g)).sum().backward()
    (expected * torch.tensor(g)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)
    for pname, p in module.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), weights[pname].grad.numpy(), atol=1e-12)
    if masking != "none":
        assert np.all(module.attention_weights.numpy()[0, :, 3:] == 0)


def test_negative_control_a_missing_mask_is_noticed():
    module = nn.AdditiveAttention(DK, DQ, HID).double()
    q, k, v = (ta.tensor(RNG.standard_normal(s)) for s in ((B, Q, DQ), (B, K, DK), (B, K, DV)))
    masked = module(q, k, v, valid_lens=[3, 5]).numpy()
    assert np.abs(masked - module(q, k, v).numpy()).max() > 1e-3


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="query_size == key_size"):
        nn.LuongAttention(3, 4, score="dot")
    with pytest.raises(ValueError, match="'dot', 'general' or 'concat'"):
        nn.LuongAttention(3, 4, score="bilinear")
    module = nn.AdditiveAttention(DK, DQ, HID)
    q, k, v = ta.zeros(B, Q, DQ), ta.zeros(B, K, DK), ta.zeros(B, K, DV)
    with pytest.raises(ValueError, match="between 1 and the 5 keys"):
        module(q, k, v, valid_lens=[0, 5])
    with pytest.raises(ValueError, match="3-D"):
        module(q[0], k, v)
