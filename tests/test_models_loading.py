"""Loading BERT checkpoints: the layouts they come in, the configs tinyattn refuses, bad
inputs, Hub repo ids (never downloaded: huggingface_hub is faked or hidden), and training a
loaded model without touching its file. Small random models: no oracle needed."""
from __future__ import annotations

import json
import os
import sys
import types

import numpy as np
import pytest

import tinyattn as ta
from tinyattn import optim
from tinyattn.io import PretrainedError, load_safetensors, resolve_pretrained, save_safetensors
from tinyattn.models import BertConfig, BertModel, SentenceEmbedder


def _tiny(folder, seed: int = 0, **overrides) -> BertModel:
    ta.manual_seed(seed)
    config = BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=12,
                        max_position_embeddings=10, **overrides)
    model = BertModel(config).eval()
    model.save_pretrained(str(folder))
    return model


IDS = np.array([[2, 5, 7, 3, 0], [2, 9, 3, 0, 0]])
MASK = (IDS != 0).astype(np.int64)


def test_round_trip_and_dtypes(tmp_path):
    model = _tiny(tmp_path)
    loaded = BertModel.from_pretrained(str(tmp_path))
    np.testing.assert_array_equal(loaded(IDS, MASK).last_hidden_state.numpy(),
                                  model(IDS, MASK).last_hidden_state.numpy())
    double = BertModel.from_pretrained(str(tmp_path), dtype="float64")
    assert double.embeddings.word_embeddings.weight.dtype == np.float64
    np.testing.assert_allclose(double(IDS, MASK).last_hidden_state.numpy(),
                               model(IDS, MASK).last_hidden_state.numpy(), atol=1e-5)
    with pytest.raises(TypeError, match="dtype must be a float dtype"):
        BertModel.from_pretrained(str(tmp_path), dtype="int64")


def test_padding_changes_nothing_for_real_tokens(tmp_path):
    """Extra padding (masked) leaves every real token's hidden state as it was; without the
    mask the padding leaks in (the negative control)."""
    model = _tiny(tmp_path)
    short = model(IDS[1:, :3]).last_hidden_state.numpy()
    padded = model(IDS[1:], MASK[1:]).last_hidden_state.numpy()[:, :3]
    np.testing.assert_allclose(padded, short, atol=1e-6)
    leaked = model(IDS[1:]).last_hidden_state.numpy()[:, :3]
    assert np.abs(leaked - short).max() > 1e-3


@pytest.mark.parametrize("grad", [False, True])
def test_skip_padding_keeps_the_real_tokens_and_zeroes_the_padding(tmp_path, grad):
    """Right, left and inner padding and a row of padding only: the real tokens' hidden
    states and position 0 (which the pooler reads, even when it is padding), the pooler
    output and, with a graph, every gradient of a loss over them equal the full
    computation's; the other padding rows are 0."""
    model = _tiny(tmp_path)
    ids = np.array([[2, 5, 7, 3, 0], [0, 0, 2, 9, 3], [2, 0, 4, 0, 3], [0, 0, 0, 0, 0]])
    mask = (ids != 0).astype(np.int64)
    computed = mask == 1
    computed[:, 0] = True
    weights = ta.tensor(np.random.default_rng(0).standard_normal((4, 5, 8)) * mask[..., None],
                        dtype="float32")
    results = []
    for skip in (False, True):
        model.zero_grad()
        with ta.set_grad_enabled(grad):
            result = model(ids, mask, skip_padding=skip)
            out, pooled = result.last_hidden_state, result.pooler_output
        if grad:
            ((out * weights).sum() + pooled.sum()).backward()
        results.append((out.numpy(), pooled.numpy(),
                        {n: p.grad.numpy() for n, p in model.named_parameters()
                         if p.grad is not None}))
    (full, full_pooled, full_grads), (skipped, skipped_pooled, skipped_grads) = results
    np.testing.assert_allclose(skipped[computed], full[computed], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(skipped_pooled, full_pooled, rtol=1e-5, atol=1e-6)
    assert np.all(skipped[~computed] == 0) and np.abs(full[~computed]).max() > 0.1
    assert set(skipped_grads) == set(full_grads) and (len(full_grads) > 0) == grad
    for name, value in full_grads.items():
        np.testing.assert_allclose(skipped_grads[name], value, rtol=1e-5, atol=1e-6)
    with ta.no_grad():                            # no padding: nothing to skip
        np.testing.assert_array_equal(model(ids[:1, :4], skip_padding=True)
                                      .last_hidden_state.numpy(),
                                      model(ids[:1, :4]).last_hidden_state.numpy())
    with pytest.raises(ValueError, match="skip_padding=True .* output_attentions"):
        model(ids, mask, output_attentions=True, skip_padding=True)


def test_attention_weights(tmp_path):
    model = _tiny(tmp_path)
    out = model(IDS, MASK, output_attentions=True)
    assert len(out.attentions) == 2 and out.attentions[0].shape == (2, 2, 5, 5)
    weights = out.attentions[1].numpy()
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)
    assert np.all(weights[1, :, :, 3:] == 0)           # padding keys get no attention


def test_checkpoint_layouts(tmp_path):
    """A task model's "bert." prefix and head, TensorFlow-era gamma/beta, the old
    position_ids buffer, and sharded files all load to the same model."""
    model = _tiny(tmp_path / "plain")
    state = load_safetensors(str(tmp_path / "plain" / "model.safetensors"))
    renamed = {"bert." + k.replace("LayerNorm.weight", "LayerNorm.gamma")
               .replace("LayerNorm.bias", "LayerNorm.beta"): v for k, v in state.items()}
    renamed["bert.embeddings.position_ids"] = np.arange(10)[None]
    renamed["cls.predictions.bias"] = np.zeros(30, np.float32)
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "config.json").write_text((tmp_path / "plain" / "config.json").read_text())
    save_safetensors(renamed, str(folder / "model.safetensors"))
    loaded = BertModel.from_pretrained(str(folder))
    assert loaded.unused_weights == ["cls.predictions.bias"]
    np.testing.assert_array_equal(loaded(IDS).last_hidden_state.numpy(),
                                  model(IDS).last_hidden_state.numpy())

    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_text((tmp_path / "plain" / "config.json").read_text())
    names = sorted(state)
    halves = {"a.safetensors": names[::2], "b.safetensors": names[1::2]}
    for shard, keys in halves.items():
        save_safetensors({k: state[k] for k in keys}, str(sharded / shard))
    index = {"weight_map": {k: s for s, keys in halves.items() for k in keys}}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    np.testing.assert_array_equal(
        BertModel.from_pretrained(str(sharded))(IDS).last_hidden_state.numpy(),
        model(IDS).last_hidden_state.numpy())
    os.remove(sharded / "b.safetensors")
    with pytest.raises(PretrainedError, match="shard b.safetensors .* is missing"):
        BertModel.from_pretrained(str(sharded))


@pytest.mark.parametrize("change,fragment", [
    ({"model_type": "roberta"}, "model_type='roberta'"),
    ({"position_embedding_type": "relative_key"}, "position_embedding_type='relative_key'"),
    ({"is_decoder": True}, "is_decoder"),
    ({"hidden_act": "swish"}, "hidden_act='swish' is not supported"),
    ({"num_attention_heads": 3}, "not divisible by num_attention_heads=3"),
    ({"hidden_size": 0}, "hidden_size must be a positive int"),
])
def test_unsupported_configs_are_refused(tmp_path, change, fragment):
    _tiny(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config.update(change)
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(PretrainedError, match=fragment.replace("(", r"\(")):
        BertModel.from_pretrained(str(tmp_path))


def test_missing_and_mismatched_files(tmp_path):
    _tiny(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["intermediate_size"] = 16
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(PretrainedError, match=r"intermediate.dense.weight has shape \(12, 8\)"):
        BertModel.from_pretrained(str(tmp_path))
    os.rename(tmp_path / "model.safetensors", tmp_path / "pytorch_model.bin")
    with pytest.raises(PretrainedError, match="Convert pytorch_model.bin once"):
        BertModel.from_pretrained(str(tmp_path))
    os.remove(tmp_path / "config.json")
    with pytest.raises(PretrainedError, match="has no config.json"):
        BertModel.from_pretrained(str(tmp_path))


def test_bad_inputs_are_named(tmp_path):
    model = _tiny(tmp_path)
    cases = [
        (dict(input_ids=[1, 2, 3]), ValueError, r"must be \(B, S\)"),
        (dict(input_ids=np.array([[1.0, 2.0]])), TypeError, "must be integers"),
        (dict(input_ids=[[1, 30]]), ValueError, r"holds 30, outside \[0, 30\)"),
        (dict(input_ids=[[1, -1]]), ValueError, "holds -1"),
        (dict(input_ids=np.zeros((1, 11), int)), ValueError, "max_position_embeddings=10"),
        (dict(input_ids=np.zeros((1, 0), int)), ValueError, "has no tokens"),
        (dict(input_ids=IDS, attention_mask=MASK[:, :4]), ValueError, "attention_mask has "
                                                                       "shape"),
        (dict(input_ids=IDS, attention_mask=MASK * 2), ValueError, "only 0 .* and 1"),
        (dict(input_ids=IDS, token_type_ids=np.full(IDS.shape, 2)), ValueError,
         r"token_type_ids holds 2"),
    ]
    for kwargs, error, fragment in cases:
        with pytest.raises(error, match=fragment):
            model(**kwargs)
    bool_mask = model(IDS, MASK.astype(bool)).last_hidden_state.numpy()
    np.testing.assert_array_equal(bool_mask, model(IDS, MASK).last_hidden_state.numpy())


def test_hub_ids_without_and_with_huggingface_hub(tmp_path, monkeypatch):
    _tiny(tmp_path)
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)     # as if not installed
    with pytest.raises(FileNotFoundError, match=r'pip install "tinyattn\[hub\]"'):
        BertModel.from_pretrained("someone/some-bert")
    with pytest.raises(FileNotFoundError, match="no such folder"):
        BertModel.from_pretrained("./no/such/folder")
    calls = []

    def snapshot_download(repo_id, revision=None, allow_patterns=None):
        calls.append((repo_id, allow_patterns))
        return str(tmp_path)                                      # no network: a local copy

    fake = types.SimpleNamespace(snapshot_download=snapshot_download)
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    model = BertModel.from_pretrained("someone/some-bert")
    assert calls[0][0] == "someone/some-bert" and "*.safetensors" in calls[0][1]
    assert model.config.hidden_size == 8

    def offline(**kwargs):
        raise OSError("no network")

    monkeypatch.setitem(sys.modules, "huggingface_hub",
                        types.SimpleNamespace(snapshot_download=offline))
    with pytest.raises(FileNotFoundError, match="not a local folder .*downloading it as a "
                       "Hugging Face Hub repo id failed .*no network.*--local-dir models/gpt2"):
        resolve_pretrained("models/gpt2")        # a folder the user forgot, or a repo id
    with pytest.raises(PretrainedError, match="is a file"):
        resolve_pretrained(str(tmp_path / "config.json"))


def test_fine_tuning_moves_weights_but_never_the_file(tmp_path):
    _tiny(tmp_path)
    before = (tmp_path / "model.safetensors").read_bytes()
    model = BertModel.from_pretrained(str(tmp_path)).train()
    start = model.embeddings.word_embeddings.weight.numpy().copy()
    opt = optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    out = model(IDS, MASK)
    loss = (out.last_hidden_state ** 2).mean() + (out.pooler_output ** 2).mean()
    loss.backward()
    grad = model.embeddings.word_embeddings.weight.grad
    grad = grad.numpy() if isinstance(grad, ta.Tensor) else np.asarray(grad)
    assert np.all(grad[0] == 0) and np.abs(grad[2]).max() > 0      # [PAD] row: no gradient
    opt.step()
    after = model.embeddings.word_embeddings.weight.numpy()
    assert np.abs(after - start)[2].max() > 0 and np.all(after[0] == start[0])
    assert (tmp_path / "model.safetensors").read_bytes() == before


def test_sentence_embedder_on_a_plain_bert_folder(tmp_path):
    """No modules.json: mean pooling, as sentence-transformers falls back to; other module
    types are refused by name."""
    _tiny(tmp_path)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(25)]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    embedder = SentenceEmbedder.from_pretrained(str(tmp_path))
    vectors = embedder.encode(["w1 w2", "w3", "unknown words here"])
    assert vectors.shape == (3, 8)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    raw = embedder.encode(["w1 w2"], normalize=False)
    assert abs(np.linalg.norm(raw) - 1.0) > 1e-3
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}]))
    os.makedirs(tmp_path / "1_Pooling")
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    with pytest.raises(PretrainedError, match="'sentence_transformers.models.Dense' .* not "
                                              "supported"):
        SentenceEmbedder.from_pretrained(str(tmp_path))
    modules = json.loads((tmp_path / "modules.json").read_text())[:2]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    cls_embedder = SentenceEmbedder.from_pretrained(str(tmp_path))
    assert cls_embedder.modes == ["cls"] and not cls_embedder.normalize
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(
        {"pooling_mode_lasttoken": True}))
    with pytest.raises(PretrainedError, match="pooling_mode_lasttoken is not supported"):
        SentenceEmbedder.from_pretrained(str(tmp_path))


def test_skip_init_draws_nothing_and_ends_with_its_block():
    from tinyattn.nn.layers import skip_init    # noqa: PLC0415
    ta.manual_seed(3)
    state = ta.get_rng_state()
    with skip_init():
        layer = ta.nn.Linear(4, 3)
    assert layer.weight.shape == (3, 4) and layer.weight.dtype == np.float32
    after = ta.get_rng_state()
    assert json.dumps(after, default=str) == json.dumps(state, default=str)
    ta.manual_seed(3)
    expected = ta.nn.Linear(4, 3).weight.numpy()
    ta.manual_seed(3)
    np.testing.assert_array_equal(ta.nn.Linear(4, 3).weight.numpy(), expected)  # drawn again


def test_inference_paths_give_the_recorded_numbers(tmp_path, monkeypatch):
    """Without a graph, GELU runs block by block and attention sequence by sequence over the
    keys in use (for the CPU cache and the padding): the same formulas, so the result must
    equal the recorded path's up to float32 round-off, padding positions included."""
    import tinyattn.ops.normal_cdf as normal_cdf    # noqa: PLC0415
    model = _tiny(tmp_path)
    monkeypatch.setattr(normal_cdf, "_GELU_BLOCK", 30)
    with ta.no_grad():
        fast = model(IDS, MASK)
    recorded = model(IDS, MASK)                           # parameters require grad: ops path
    assert recorded.last_hidden_state.requires_grad and not fast.last_hidden_state.requires_grad
    np.testing.assert_allclose(fast.last_hidden_state.numpy(),
                               recorded.last_hidden_state.numpy(), rtol=1e-5, atol=1e-6)
    with ta.no_grad():                                    # negative control: a wrong mask
        wrong = model(IDS, np.ones_like(MASK)).last_hidden_state.numpy()
    assert np.abs(wrong - recorded.last_hidden_state.numpy()).max() > 1e-3


