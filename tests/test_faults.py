"""Legal but degenerate input that used to crash: zero keys, an empty softmax axis,
d_k = 0, no classes, empty sequences. Each gives PyTorch's answer (or the tiled path's), or a
clear error where there is no answer. Also the top-level command line's raw tracebacks."""
import subprocess
import sys

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F

torch = pytest.importorskip("torch", reason="the answers are compared with PyTorch's")
TF = torch.nn.functional


def _pair(*shape, seed=0):
    """The same float64 values as a tinyattn tensor and a torch tensor, both leaves."""
    values = np.random.default_rng(seed + len(shape)).standard_normal(shape)
    return (ta.tensor(values, requires_grad=True),
            torch.tensor(values, requires_grad=True))


def _array(grad):
    """A gradient as a NumPy array (an ndarray today, a Tensor after the core redesign)."""
    return grad.numpy() if hasattr(grad, "numpy") else np.asarray(grad)


def _grads_match(ours, theirs):
    for a, b in zip(ours, theirs):
        assert a.grad.shape == tuple(b.grad.shape)
        np.testing.assert_allclose(_array(a.grad), b.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("impl", ["plain", "tiled"])
@pytest.mark.parametrize("is_causal", [False, True])
def test_attention_with_zero_keys_gives_zeros_like_torch(impl, is_causal):
    (q, tq), (k, tk), (v, tv) = _pair(2, 3, 4, 8), _pair(2, 3, 0, 8), _pair(2, 3, 0, 5)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal, impl=impl)
    want = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=is_causal)
    assert out.shape == tuple(want.shape) == (2, 3, 4, 5)
    np.testing.assert_array_equal(out.numpy(), want.detach().numpy())
    (out * 1.5).sum().backward()
    (want * 1.5).sum().backward()
    _grads_match([q, k, v], [tq, tk, tv])


def test_zero_keys_in_the_packed_and_weights_paths():
    q, _ = _pair(1, 2, 3, 4)
    k, v = ta.zeros(1, 2, 0, 4, dtype="float64"), ta.zeros(1, 2, 0, 4, dtype="float64")
    out, weights = F.scaled_dot_product_attention(q, k, v, need_weights=True)
    assert weights.shape == (1, 2, 3, 0) and not out.numpy().any()


@pytest.mark.parametrize("impl", ["plain", "tiled"])
def test_attention_with_d_k_zero_averages_the_values_like_torch(impl):
    """d_k = 0: every score is an empty dot product (0), so each query averages v."""
    (q, tq), (k, tk), (v, tv) = _pair(2, 4, 0), _pair(2, 5, 0), _pair(2, 5, 3)
    out = F.scaled_dot_product_attention(q, k, v, impl=impl)
    want = TF.scaled_dot_product_attention(tq, tk, tv)
    np.testing.assert_allclose(out.numpy(), want.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(v.numpy().mean(1, keepdims=True),
                                                            (2, 4, 3)), atol=1e-12)
    (out ** 2).sum().backward()
    (want ** 2).sum().backward()
    _grads_match([q, k, v], [tq, tk, tv])


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((3, 0), -1), ((3, 0), 1), ((0, 4), 0), ((2, 0, 3), 1),
                                       ((3, 0), 0)])
def test_softmax_over_an_empty_axis_is_empty_like_torch(fn, shape, dim):
    x, tx = _pair(*shape)
    out = getattr(F, fn)(x, dim=dim)
    want = getattr(TF, fn)(tx, dim=dim)
    assert out.shape == tuple(want.shape) == shape
    out.sum().backward()
    want.sum().backward()
    _grads_match([x], [tx])


def test_the_empty_axis_guard_does_not_touch_ordinary_rows():
    """Negative control for the guard: a non-empty row still gets exp(x - max) / sum."""
    x, tx = _pair(3, 5)
    np.testing.assert_allclose(F.softmax(x, dim=-1).numpy(),
                               TF.softmax(tx, dim=-1).detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_no_rows(reduction):
    for classes in (4, 0):
        logits = ta.zeros(0, classes, dtype="float64", requires_grad=True)
        loss = F.cross_entropy(logits, np.zeros(0, dtype=np.int64), reduction=reduction)
        assert loss.shape == ((0,) if reduction == "none" else ())
        if reduction == "mean":                # torch's mean over no rows: 0 / 0
            assert np.isnan(loss.item())
        else:
            assert not loss.numpy().any()      # a sum over no rows is 0
        loss.sum().backward()
        assert logits.grad.shape == (0, classes)


def test_cross_entropy_with_zero_classes_explains_instead_of_0_to_minus_1():
    logits = ta.zeros(3, 0)
    with pytest.raises(ValueError, match="C = 0 classes, so no target class is valid"):
        F.cross_entropy(logits, np.array([0, 0, 0]))
    # rows that are all ignored need no class: torch's 0 / 0, like every fully ignored batch
    loss = F.cross_entropy(ta.zeros(3, 0, requires_grad=True), np.full(3, -100),
                           label_smoothing=0.1)
    assert np.isnan(loss.item())


def test_an_out_of_range_id_into_an_empty_table_says_there_are_none():
    with pytest.raises(IndexError, match=r"out of range; there are none \(size 0\)"):
        F.embedding(ta.tensor(np.array([0])), ta.zeros(0, 3))


@pytest.mark.parametrize("attn_impl", ["plain", "tiled"])
@pytest.mark.parametrize("pos_encoding", ["learned", "rope", "alibi"])
def test_gpt_on_empty_sequences_gives_empty_logits(attn_impl, pos_encoding):
    if attn_impl == "tiled" and pos_encoding == "alibi":
        pytest.skip("alibi needs the plain path")
    ta.manual_seed(0)
    model = ta.nn.GPT(ta.nn.GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2,
                                      d_model=16, attn_impl=attn_impl,
                                      pos_encoding=pos_encoding))
    ids = np.zeros((2, 0), dtype=np.int64)
    logits = model(ids)
    assert logits.shape == (2, 0, 10)
    logits, loss = model(ids, ids)
    assert np.isnan(loss.item())               # no position is scored: torch's mean, 0 / 0
    loss.backward()
    assert all(p.grad is None or not _array(p.grad).any() for p in model.parameters())


# ------------------------------------------------------------------ the command line
def _cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "tinyattn", *args], capture_output=True,
                          text=True, timeout=120)


def test_gradcheck_with_a_negative_seed_is_refused_with_a_message():
    result = _cli("gradcheck", "softmax", "--seed", "-1")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "--seed: must be at least 0, got -1" in result.stderr


@pytest.mark.parametrize("command", ["tinyattn gradcheck --fast",
                                     "tinyattn.exercises --solution attention",
                                     "tinyattn doctor"])
def test_a_command_piped_into_head_exits_quietly(command):
    """`python -m tinyattn gradcheck | head -2`: head closes the pipe after two lines; the
    command stops without a BrokenPipeError traceback, as Unix tools do (141 = 128 + SIGPIPE,
    what `yes | head` gives; 0 when everything was written before head left)."""
    pipeline = f"set -o pipefail; {sys.executable} -m {command} | head -2"
    result = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True,
                            timeout=300)
    assert len(result.stdout.splitlines()) == 2
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, \
        result.stderr
    assert result.returncode in (0, 141)
