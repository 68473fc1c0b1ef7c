"""The vision transformer (nn/vit.py): patch embedding as a strided convolution is "cut into
patches + one Linear", the token layout, attention rollout's rows and its residual rule, and
a short training run of examples/vision_digits.py that beats chance by far. The example's
full run (30 epochs) is measured in docs/nn.md#vision-transformer, not here."""
import importlib.util
import pathlib

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import nn

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_patch_embedding_is_patches_times_a_linear():
    ta.manual_seed(0)
    vit = nn.VisionTransformer(image_size=8, patch_size=2, in_channels=3, d_model=16, depth=1,
                               num_heads=2)
    images = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    got = vit.patch_embed(ta.tensor(images)).numpy()             # (B, D, 4, 4)
    patches = images.reshape(2, 3, 4, 2, 4, 2).transpose(0, 2, 4, 1, 3, 5).reshape(2, 16, 12)
    weight = vit.patch_embed.weight.numpy().reshape(16, 12)
    want = patches @ weight.T + vit.patch_embed.bias.numpy()    # (B, N, D)
    np.testing.assert_allclose(got.reshape(2, 16, 16).transpose(0, 2, 1), want, rtol=1e-5,
                               atol=1e-5)
    # negative control: the patches taken in the wrong order do not match
    wrong = images.reshape(2, 3, 4, 2, 4, 2).transpose(0, 4, 2, 1, 3, 5).reshape(2, 16, 12)
    assert not np.allclose(got.reshape(2, 16, 16).transpose(0, 2, 1),
                           wrong @ weight.T + vit.patch_embed.bias.numpy(), atol=1e-3)


def test_tokens_logits_and_gradients_reach_every_parameter():
    ta.manual_seed(0)
    vit = nn.VisionTransformer(d_model=32, depth=2, num_heads=4)
    x = ta.randn(3, 1, 8, 8)
    assert vit.tokens(x).shape == (3, 17, 32)
    logits = vit(x)
    assert logits.shape == (3, 10)
    logits.sum().backward()
    missing = [name for name, p in vit.named_parameters() if p.grad is None]
    assert not missing
    with pytest.raises(ValueError, match="multiple of patch_size"):
        nn.VisionTransformer(image_size=8, patch_size=3)
    with pytest.raises(ValueError, match="expected images"):
        vit(ta.randn(3, 1, 6, 6))


def test_attention_rollout_rows_and_residual_rule():
    ta.manual_seed(0)
    vit = nn.VisionTransformer(d_model=32, depth=3, num_heads=4)
    maps = vit.attention_maps(ta.randn(2, 1, 8, 8))
    assert len(maps) == 3 and maps[0].shape == (2, 4, 17, 17)
    assert all(block.attention is None for block in vit.blocks)   # nothing kept afterwards
    rollout = nn.attention_rollout(maps)
    np.testing.assert_allclose(rollout.sum(axis=-1), 1.0, rtol=1e-12)
    # by hand for two layers: average heads, add I, renormalise, multiply later @ earlier
    a = [m.numpy().astype(np.float64).mean(axis=1) + np.eye(17) for m in maps[:2]]
    a = [m / m.sum(-1, keepdims=True) for m in a]
    np.testing.assert_allclose(nn.attention_rollout(maps[:2]), a[1] @ a[0], rtol=1e-10)
    assert not np.allclose(nn.attention_rollout(maps[:2]), a[0] @ a[1], rtol=1e-6)


def test_digits_example_short_run_beats_chance(capsys):
    pytest.importorskip("sklearn", reason="the digits ship with scikit-learn")
    spec = importlib.util.spec_from_file_location("vision_digits",
                                                  EXAMPLES / "vision_digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--epochs", "2"])
    assert results["cnn"] > 0.5               # chance is 0.1; a ViT needs more epochs
    assert "held-out accuracy" in capsys.readouterr().out


def test_vit_learns_a_batch_of_digits():
    """The whole model trains: 64 digits fitted in 60 AdamW steps (a broken gradient path,
    such as positions or the class token cut off, stays near log(10) = 2.3)."""
    pytest.importorskip("sklearn", reason="the digits ship with scikit-learn")
    from sklearn.datasets import load_digits
    import tinyattn.functional as F
    from tinyattn import optim
    digits = load_digits()
    x = ta.tensor((digits.images[:64] / 16.0).astype(np.float32)[:, None])
    y = ta.tensor(digits.target[:64].astype(np.int64))
    ta.manual_seed(0)
    vit = nn.VisionTransformer(d_model=64, depth=4, num_heads=4)
    opt = optim.AdamW(vit.parameters(), lr=1e-3, weight_decay=0.05)
    for _ in range(60):
        loss = F.cross_entropy(vit(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.6
