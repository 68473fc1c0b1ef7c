"""GPT.from_pretrained / save_pretrained against transformers' GPT2LMHeadModel (randomly
initialised, small, saved as safetensors): float64 logits, every gradient, greedy generations
with and without the KV cache, zero-copy float32 loading, saving for transformers, sharded
checkpoints, negative controls and clear errors. Nothing is downloaded."""
import json
import os
import sys

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.io import PretrainedError
from tinyattn.models.gpt2 import to_hf_names

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

V = 97


def hf_config(**overrides):
    options = dict(vocab_size=V, n_positions=24, n_embd=32, n_layer=2, n_head=4, n_inner=48,
                   layer_norm_epsilon=3e-5, bos_token_id=None, eos_token_id=None)
    options.update(overrides)
    return transformers.GPT2Config(**options)


def hf_model(dtype=torch.float64, **overrides):
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(hf_config(**overrides)).to(dtype).eval()
    with torch.no_grad():                    # larger biases and norms: every path matters
        for name, p in model.named_parameters():
            if "ln" in name or name.endswith("bias"):
                p.add_(torch.randn_like(p) * 0.2)
    return model


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(folder, float64 transformers model)."""
    folder = str(tmp_path_factory.mktemp("gpt2"))
    model = hf_model()
    model.save_pretrained(folder, safe_serialization=True)
    return folder, model


IDS = np.random.default_rng(0).integers(0, V, (2, 11))


def test_float64_logits_equal_transformers(saved):
    folder, hf = saved
    ours = nn.GPT.from_pretrained(folder, dtype="float64")
    assert ours.config.norm_eps == 3e-5 and ours.config.d_ff == 48
    assert ours.config.activation == "gelu_tanh" and ours.lm_head.weight is ours.tok_emb.weight
    theirs = hf(torch.from_numpy(IDS)).logits.detach().numpy()
    np.testing.assert_allclose(ours(IDS).numpy(), theirs, atol=1e-10, rtol=0)


def test_every_gradient_equals_transformers(saved):
    folder, hf = saved
    ours = nn.GPT.from_pretrained(folder, dtype="float64")
    hf.zero_grad()
    ids = torch.from_numpy(IDS)
    hf(ids, labels=ids).loss.backward()       # transformers shifts the labels inside
    _, loss = ours(IDS[:, :-1], IDS[:, 1:])
    loss.backward()
    grads = {name: p.grad.numpy() for name, p in ours.named_parameters()}
    mapped = to_hf_names(grads, ours.config)
    expected = {name: p.grad.numpy() for name, p in hf.named_parameters()}
    assert set(mapped) == set(expected)
    for name, grad in mapped.items():
        np.testing.assert_allclose(grad, expected[name], atol=1e-8, rtol=0, err_msg=name)


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_generation_equals_transformers(saved, use_cache):
    folder, hf = saved
    ours = nn.GPT.from_pretrained(folder, dtype="float64")
    prompt = IDS[:, :4]
    theirs = hf.generate(torch.from_numpy(prompt), max_new_tokens=16, do_sample=False,
                         use_cache=use_cache, pad_token_id=0).numpy()
    mine = ours.generate(prompt, 16, temperature=0, use_cache=use_cache).numpy()
    assert mine.shape == (2, 20)
    assert np.array_equal(mine, theirs)


def test_float32_loads_as_views_of_the_file_and_matches(tmp_path):
    hf = hf_model(torch.float32)
    hf.save_pretrained(tmp_path, safe_serialization=True)
    ours = nn.GPT.from_pretrained(str(tmp_path))
    assert not ours.training
    for name, p in ours.named_parameters():
        assert p.dtype == np.float32 and not p.data.flags.owndata, name   # no copy
    theirs = hf(torch.from_numpy(IDS)).logits.detach().numpy()
    np.testing.assert_allclose(ours(IDS).numpy(), theirs, atol=2e-5, rtol=0)
    before = open(tmp_path / "model.safetensors", "rb").read()
    opt = ta.optim.SGD(ours.parameters(), lr=0.1)
    ours.train()
    ours(IDS[:, :-1], IDS[:, 1:])[1].backward()
    opt.step()                                                # writes into the mapped pages
    assert open(tmp_path / "model.safetensors", "rb").read() == before   # copy-on-write


def test_save_pretrained_loads_in_transformers(tmp_path):
    ta.manual_seed(3)
    for tie in (True, False):
        config = nn.GPTConfig(vocab_size=V, block_size=16, n_layer=2, n_head=2, d_model=16,
                              activation="gelu_tanh", tie_weights=tie, norm_eps=2e-5)
        ours = nn.GPT(config).double()
        folder = tmp_path / f"tie{tie}"
        ours.save_pretrained(str(folder))
        hf = transformers.GPT2LMHeadModel.from_pretrained(folder, dtype=torch.float64).eval()
        theirs = hf(torch.from_numpy(IDS)).logits.detach().numpy()
        np.testing.assert_allclose(ours(IDS).numpy(), theirs, atol=1e-10, rtol=0)
        again = nn.GPT.from_pretrained(str(folder), dtype="float64")
        np.testing.assert_allclose(again(IDS).numpy(), ours(IDS).numpy(), atol=1e-12, rtol=0)
        assert (again.lm_head.weight is again.tok_emb.weight) == tie


def test_sharded_checkpoint_loads(tmp_path):
    hf = hf_model()
    hf.save_pretrained(tmp_path, safe_serialization=True, max_shard_size="40KB")
    assert os.path.isfile(tmp_path / "model.safetensors.index.json")
    ours = nn.GPT.from_pretrained(str(tmp_path), dtype="float64")
    theirs = hf(torch.from_numpy(IDS)).logits.detach().numpy()
    np.testing.assert_allclose(ours(IDS).numpy(), theirs, atol=1e-10, rtol=0)


def test_the_hub_layout_loads(saved, tmp_path):
    """openai-community/gpt2's own file: names without "transformer.", each layer's causal
    mask buffer (attn.bias, attn.masked_bias) stored beside the weights."""
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    folder, hf = saved
    weights = safetensors_numpy.load_file(os.path.join(folder, "model.safetensors"))
    renamed = {name.replace("transformer.", "", 1): array for name, array in weights.items()}
    for i in range(2):
        renamed[f"h.{i}.attn.bias"] = np.tril(np.ones((1, 1, 24, 24), dtype=np.float32))
        renamed[f"h.{i}.attn.masked_bias"] = np.array(-1e4, dtype=np.float32)
    safetensors_numpy.save_file(renamed, str(tmp_path / "model.safetensors"))
    (tmp_path / "config.json").write_text(open(os.path.join(folder, "config.json")).read())
    ours = nn.GPT.from_pretrained(str(tmp_path), dtype="float64")
    theirs = hf(torch.from_numpy(IDS)).logits.detach().numpy()
    np.testing.assert_allclose(ours(IDS).numpy(), theirs, atol=1e-10, rtol=0)
    renamed["h.0.attn.extra.weight"] = np.zeros(2, dtype=np.float64)
    safetensors_numpy.save_file(renamed, str(tmp_path / "model.safetensors"))
    with pytest.raises(PretrainedError, match="weights that GPT-2 does not have: "
                                              "\\['h.0.attn.extra.weight'\\]"):
        nn.GPT.from_pretrained(str(tmp_path))


# ------------------------------------------------------------------ negative controls
def test_negative_control_an_untransposed_square_weight_is_caught(saved):
    """c_proj is (D, D): forgetting its transpose would pass every shape check. The logits
    comparison catches it."""
    folder, hf = saved
    ours = nn.GPT.from_pretrained(folder, dtype="float64")
    proj = ours.blocks[0].attn.out_proj
    proj.weight = nn.Parameter(proj.weight.numpy().T.copy())
    theirs = hf(torch.from_numpy(IDS)).logits.detach().numpy()
    assert np.abs(ours(IDS).numpy() - theirs).max() > 1e-3


def test_negative_control_exact_gelu_differs_beyond_the_tolerance(saved):
    """GPT-2's tanh GELU against the exact one: 1e-7 apart here, far above 1e-10."""
    folder, hf = saved
    ours = nn.GPT.from_pretrained(folder, dtype="float64")
    for block in ours.blocks:
        block.mlp.activation = nn.GELU("none")
    theirs = hf(torch.from_numpy(IDS)).logits.detach().numpy()
    assert np.abs(ours(IDS).numpy() - theirs).max() > 1e-8


# ------------------------------------------------------------------ errors
def test_clear_errors(tmp_path, saved, monkeypatch):
    folder, _ = saved
    with pytest.raises(FileNotFoundError, match="no such folder"):
        nn.GPT.from_pretrained(str(tmp_path / "missing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(PretrainedError, match="has no config.json"):
        nn.GPT.from_pretrained(str(empty))
    (empty / "config.json").write_text(json.dumps(hf_config().to_dict()))
    with pytest.raises(PretrainedError, match="no model.safetensors .*hf download"):
        nn.GPT.from_pretrained(str(empty))
    bad = tmp_path / "bad"
    bad.mkdir()
    config = json.loads(open(os.path.join(folder, "config.json")).read())
    bad_config = dict(config, scale_attn_by_inverse_layer_idx=True)
    (bad / "config.json").write_text(json.dumps(bad_config))
    with pytest.raises(PretrainedError, match="scale_attn_by_inverse_layer_idx=True"):
        nn.GPT.from_pretrained(str(bad))
    (bad / "config.json").write_text(json.dumps(dict(config, n_layer=3)))
    os.symlink(os.path.join(folder, "model.safetensors"), bad / "model.safetensors")
    with pytest.raises(PretrainedError, match="no h.2.ln_1.weight .*n_layer=3"):
        nn.GPT.from_pretrained(str(bad))
    (bad / "config.json").write_text(json.dumps(dict(config, n_embd=64)))
    with pytest.raises(PretrainedError, match="shape .* in the checkpoint"):
        nn.GPT.from_pretrained(str(bad))
    (bad / "config.json").write_text(json.dumps(dict(config, model_type="bert")))
    with pytest.raises(PretrainedError, match="model_type is 'bert'"):
        nn.GPT.from_pretrained(str(bad))
    with pytest.raises(TypeError, match="dtype must be"):
        nn.GPT.from_pretrained(folder, dtype="int64")
    with pytest.raises(ValueError, match="pos_encoding='rope'"):
        nn.GPT(nn.GPTConfig(pos_encoding="rope")).save_pretrained(str(tmp_path / "rope"))
    with pytest.raises(ValueError, match="norm_eps must be"):
        nn.GPTConfig(norm_eps=float("nan"))
    with pytest.raises(ValueError, match="norm='rmsnorm', mlp='swiglu', n_kv_head=1"):
        nn.GPT(nn.GPTConfig(norm="rmsnorm", mlp="swiglu", n_kv_head=1)).save_pretrained(
            str(tmp_path / "llama"))
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)    # as if not installed
    with pytest.raises(FileNotFoundError, match="tinyattn\\[hub\\]"):
        nn.GPT.from_pretrained("openai-community/gpt2-not-here")

