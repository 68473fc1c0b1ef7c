"""Module system, basic layers (torch parity in float64), init, save/load checkpoints."""
import os

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.serialization import CheckpointError, load, save


def f64(*shape, seed=0, grad=True):
    rng = np.random.default_rng(seed)
    return ta.tensor(rng.standard_normal(shape), dtype="float64", requires_grad=grad)


class Tiny(nn.Module):
    def __init__(self):
        self.lin = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.norm(self.lin(x)))


# ------------------------------------------------------------------ Module API
def test_parameters_names_modes_and_zero_grad():
    m = Tiny()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["lin.weight", "lin.bias", "norm.weight", "norm.bias"]
    assert m.num_parameters() == 12 + 4 + 4 + 4
    assert [type(x).__name__ for x in m.modules()] == ["Tiny", "Linear", "LayerNorm", "Dropout"]
    m.eval()
    assert not m.drop.training
    m.train()
    assert m.drop.training
    m(ta.randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    assert "params" not in repr(m) and "Linear(in_features=3, out_features=4" in repr(m)
    assert "24 params" in m.summary()          # torch prints no counts; summary() does


def test_load_state_dict_errors_name_the_key_and_shapes_and_load_nothing():
    m = Tiny()
    before = m.state_dict()
    bad = dict(before)
    bad["lin.bias"] = np.ones(4, np.float32) * 7
    bad["norm.weight"] = np.ones(5, np.float32)
    with pytest.raises(ValueError, match=r"size mismatch for norm.weight: copying a param "
                       r"with shape \(5,\) from checkpoint, the shape in current model is "
                       r"\(4,\)\."):
        m.load_state_dict(bad)
    assert np.array_equal(m.lin.bias.numpy(), before["lin.bias"])   # nothing half-loaded
    missing = {k: v for k, v in before.items() if k != "lin.bias"}
    with pytest.raises(KeyError, match='Missing key\\(s\\) in state_dict: "lin.bias"'):
        m.load_state_dict(missing)
    with pytest.raises(KeyError, match='Unexpected key\\(s\\) in state_dict: "extra"'):
        m.load_state_dict({**before, "extra": np.zeros(1)})
    m.load_state_dict(missing, strict=False)


def test_double_and_float_convert_every_parameter():
    m = Tiny().double()
    assert all(p.dtype == np.float64 for p in m.parameters())
    assert all(p.dtype == np.float32 for p in m.float().parameters())


# ------------------------------------------------------------------ init
def test_init_is_seedable_and_documented_bounds():
    ta.manual_seed(7)
    a = nn.Linear(50, 40)
    ta.manual_seed(7)
    b = nn.Linear(50, 40)
    assert np.array_equal(a.weight.numpy(), b.weight.numpy())
    bound = 1 / np.sqrt(50)
    assert a.weight.dtype == np.float32
    assert np.abs(a.weight.numpy()).max() <= bound and np.abs(a.weight.numpy()).max() > 0.9 * bound
    emb = nn.Embedding(100, 50)
    assert abs(emb.weight.numpy().std() - 1.0) < 0.05
    ta.manual_seed(8)
    assert not np.array_equal(nn.Linear(50, 40).weight.numpy(), a.weight.numpy())


# ------------------------------------------------------------------ torch parity
def _torch_grads(torch_module):
    return {n: p.grad.numpy() for n, p in torch_module.named_parameters()}


@pytest.mark.parametrize("kind", ["linear", "linear_nobias", "layernorm", "embedding",
                                  "feedforward"])
def test_layers_match_torch_outputs_and_gradients(kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if kind.startswith("linear"):
        tm = torch.nn.Linear(5, 3, bias=kind == "linear", dtype=torch.float64)
        ours = nn.Linear(5, 3, bias=kind == "linear")
        x = rng.standard_normal((2, 4, 5))
    elif kind == "layernorm":
        tm = torch.nn.LayerNorm(5, dtype=torch.float64)
        with torch.no_grad():
            tm.weight.normal_()
            tm.bias.normal_()
        ours = nn.LayerNorm(5)
        x = rng.standard_normal((2, 4, 5)) * 3 + 1
    elif kind == "embedding":
        tm = torch.nn.Embedding(7, 5, dtype=torch.float64)
        ours = nn.Embedding(7, 5)
        x = np.array([[1, 3, 3, 6], [0, 1, 1, 1]])     # repeated ids: rows accumulate
    else:
        tm = torch.nn.Sequential(torch.nn.Linear(5, 9), torch.nn.GELU(), torch.nn.Dropout(0.0),
                                 torch.nn.Linear(9, 5)).double()
        ours = nn.FeedForward(5, 9, activation="gelu")
        x = rng.standard_normal((2, 4, 5))
    ours.double()
    sd = {k: v.numpy() for k, v in tm.state_dict().items()}
    if kind == "feedforward":
        sd = {k.replace("0.", "linear1.").replace("3.", "linear2."): v for k, v in sd.items()}
    ours.load_state_dict(sd)
    is_ids = kind == "embedding"
    tx = torch.tensor(x) if is_ids else torch.tensor(x, requires_grad=True)
    ox = ta.tensor(x) if is_ids else ta.tensor(x, dtype="float64", requires_grad=True)
    t_out, o_out = tm(tx), ours(ox)
    g = rng.standard_normal(t_out.shape)
    (t_out * torch.tensor(g)).sum().backward()
    (o_out * ta.tensor(g, dtype="float64")).sum().backward()
    np.testing.assert_allclose(o_out.numpy(), t_out.detach().numpy(), atol=1e-10, rtol=0)
    if not is_ids:
        np.testing.assert_allclose(ox.grad, tx.grad.numpy(), atol=1e-10, rtol=0)
    tg = _torch_grads(tm)
    if kind == "feedforward":
        tg = {k.replace("0.", "linear1.").replace("3.", "linear2."): v for k, v in tg.items()}
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad, tg[name], atol=1e-10, rtol=0, err_msg=name)


def test_layer_gradchecks():
    ta.manual_seed(0)
    x = f64(2, 3)
    for layer in (nn.Linear(3, 2), nn.LayerNorm(3), nn.FeedForward(3, 4, activation="relu")):
        layer.double()
        assert ta.gradcheck(lambda *_: layer(x), [x, *layer.parameters()])
    emb = nn.Embedding(4, 3).double()
    assert ta.gradcheck(lambda *_: emb(np.array([[0, 2, 2]])), [emb.weight])


def test_dropout_module_and_activations():
    x = ta.ones(1000)
    ta.manual_seed(0)
    d = nn.Dropout(0.25)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert d.eval()(x) is x
    assert np.array_equal(nn.ReLU()(ta.tensor([-1.0, 2.0])).numpy(), [0.0, 2.0])
    with pytest.raises(ValueError, match="activation must be one of"):
        nn.FeedForward(4, activation="swish")
    with pytest.raises(ValueError, match="p must be a probability"):
        nn.Dropout(1.5)


def test_layer_bad_input():
    with pytest.raises(ValueError, match="input has 4 features .* in_features=3"):
        nn.Linear(3, 2)(ta.randn(2, 4))
    with pytest.raises(IndexError, match="token id 9 is out of range; valid values are 0 to 4"):
        nn.Embedding(5, 2)(np.array([[1, 9]]))
    with pytest.raises(ValueError, match="out_features must be a positive int"):
        nn.Linear(3, 0)


# ------------------------------------------------------------------ save / load
def test_save_load_nested_checkpoint_round_trip(tmp_path):
    m = Tiny()
    ckpt = {
        "model": m.state_dict(),
        "optimizer": {"state": {0: {"m": np.ones(3), "v": np.zeros(3)}}, "lr": 3e-4},
        "schedule": {"name": "cosine", "warmup": 100, "last": [1.5, 2.5]},
        "step": 1200,
        "rng": ta.get_rng_state(),
        "scalar": np.float32(0.5),
        "tensor": ta.randn(2, 2),
        "flags": (True, None),
    }
    path = str(tmp_path / "ckpt.npz")
    save(ckpt, path)
    back = load(path)
    assert back["step"] == 1200 and back["schedule"]["name"] == "cosine"
    assert back["optimizer"]["state"][0]["m"].tolist() == [1.0, 1.0, 1.0]
    assert back["scalar"].dtype == np.float32 and back["flags"] == (True, None)
    assert np.array_equal(back["tensor"], ckpt["tensor"].numpy())
    for key, value in ckpt["model"].items():
        assert back["model"][key].dtype == value.dtype and np.array_equal(back["model"][key],
                                                                            value)
    ta.set_rng_state(back["rng"])                       # the generator state survives
    a = ta.randn(3).numpy()
    ta.set_rng_state(ckpt["rng"])
    assert np.array_equal(a, ta.randn(3).numpy())
    fresh = Tiny()
    fresh.load_state_dict(back["model"])
    assert np.array_equal(fresh.lin.weight.numpy(), m.lin.weight.numpy())
    assert np.array_equal(np.load(path)["model/lin.weight"], ckpt["model"]["lin.weight"])


def test_save_is_atomic_when_interrupted(tmp_path, monkeypatch):
    path = str(tmp_path / "ckpt.npz")
    save({"a": np.arange(3)}, path)

    def boom(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(np.lib.format, "write_array", boom)   # dies mid-write
    with pytest.raises(KeyboardInterrupt):
        save({"a": np.arange(5)}, path)
    monkeypatch.undo()
    assert load(path)["a"].tolist() == [0, 1, 2]        # old file intact
    assert os.listdir(tmp_path) == ["ckpt.npz"]         # no temporary left behind


def test_load_rejects_corrupt_and_foreign_files(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip file at all")
    with pytest.raises(CheckpointError, match="corrupt or was not written by tinyattn.save"):
        load(str(junk))
    foreign = tmp_path / "foreign.npz"
    np.savez(str(foreign), a=np.ones(2))
    with pytest.raises(CheckpointError, match="without the '__tinyattn__' entry"):
        load(str(foreign))
    good = tmp_path / "good.npz"
    save({"a": np.ones(1000)}, str(good))
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:300])
    with pytest.raises(CheckpointError):
        load(str(truncated))


def test_save_pickles_what_is_not_data_as_torch_save(tmp_path):
    """Round four (issue 31): torch.save pickles what it is given; so does save for what is
    not plain data, and load refuses it under weights_only=True unless allow-listed."""
    import pickle
    save({"a": {1, 2}}, str(tmp_path / "x.npz"))
    assert load(str(tmp_path / "x.npz")) == {"a": {1, 2}}          # sets are allowed
    save({(1, 2): 1}, str(tmp_path / "x.npz"))
    assert load(str(tmp_path / "x.npz")) == {(1, 2): 1}
    from tinyattn import nn, optim                     # torch.save(model): the habit
    model = nn.Linear(2, 3)
    save(model, str(tmp_path / "x.npz"))
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        load(str(tmp_path / "x.npz"))
    assert type(load(str(tmp_path / "x.npz"), weights_only=False)) is nn.Linear
    save({"opt": optim.SGD(model.parameters(), lr=0.1)}, str(tmp_path / "x.npz"))
    assert type(load(str(tmp_path / "x.npz"), weights_only=False)["opt"]) is optim.SGD


def test_checkpoint_keys_that_collide_with_numpy_savez_arguments(tmp_path):
    path = str(tmp_path / "odd.npz")
    ta.save({"file": np.arange(3), "allow_pickle": np.ones(2), "x": 1}, path)
    back = ta.load(path)
    np.testing.assert_array_equal(back["file"], np.arange(3))
    np.testing.assert_array_equal(back["allow_pickle"], np.ones(2))
    assert back["x"] == 1
    assert os.stat(path).st_mode & 0o044, "checkpoint should be readable like other files"
