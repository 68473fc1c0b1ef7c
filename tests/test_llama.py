"""A Llama-style GPT from GPTConfig options (RoPE, RMSNorm, SwiGLU, grouped-query attention,
no biases): the SwiGLU block against torch, the blocks the options build, a float64 gradcheck
of the whole model, and training on the reverse task to a held-out exact match that chance
cannot reach, then generating with the KV cache exactly as without it."""
import inspect

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
import tinyattn.nn as nn
from tinyattn import optim
from tinyattn.train.loop import evaluate
from tinyattn.train.tasks import IGNORE, make_task

needs_silu = pytest.mark.skipif(not hasattr(F, "silu"), reason="F.silu is not in "
                                "tinyattn.functional yet (the op is not there)")
HAS_GQA = "num_kv_heads" in inspect.signature(nn.MultiHeadAttention).parameters
GQA_REASON = ("MultiHeadAttention(num_kv_heads=...) is not on this branch yet (the lead's "
              "grouped-query attention); GPTConfig(n_kv_head=...) is wired to it")
KV_HEADS = [None, pytest.param(2, marks=pytest.mark.skipif(not HAS_GQA, reason=GQA_REASON))]


def llama_config(**overrides):
    options = dict(vocab_size=11, block_size=16, n_layer=2, n_head=4, d_model=32,
                   pos_encoding="rope", norm="rmsnorm", mlp="swiglu", bias=False,
                   tie_weights=False)
    options.update(overrides)
    return nn.GPTConfig(**options)


def test_llama_hidden_dim_rule():
    assert nn.llama_hidden_dim(4096) == 11008                # Llama-2 7B
    assert nn.llama_hidden_dim(32, multiple_of=8) == 88      # int(2 * 128 / 3) = 85 -> 88
    assert nn.llama_hidden_dim(4096, multiple_of=1024, ffn_dim_multiplier=1.3) == 14336
    with pytest.raises(ValueError, match="multiple_of must be a positive int"):
        nn.llama_hidden_dim(8, multiple_of=0)


@needs_silu
def test_swiglu_matches_torch_and_gradchecks():
    torch = pytest.importorskip("torch")
    ta.manual_seed(0)
    block = nn.SwiGLU(6, 10).double()
    w1, w2, w3 = (torch.tensor(getattr(block, n).weight.numpy()) for n in ("w1", "w2", "w3"))
    x = np.random.default_rng(0).standard_normal((2, 3, 6))
    xt = torch.tensor(x, requires_grad=True)
    expected = torch.nn.functional.silu(xt @ w1.T) * (xt @ w3.T) @ w2.T
    ours = ta.tensor(x, requires_grad=True)
    out = block(ours)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    assert [n for n, _ in block.named_parameters()] == ["w1.weight", "w2.weight", "w3.weight"]
    assert ta.gradcheck(block, [ta.tensor(x[:1, :2], requires_grad=True)])


def test_config_options_are_validated():
    for bad, match in [(dict(norm="batchnorm"), "norm must be one of"),
                       (dict(mlp="moe"), "mlp must be one of"),
                       (dict(n_kv_head=3), "not a multiple of n_kv_head=3"),
                       (dict(n_kv_head=0), "n_kv_head must be a positive int"),
                       (dict(d_ff=-4), "d_ff must be a positive int")]:
        with pytest.raises(ValueError, match=match):
            llama_config(**bad)


@needs_silu
def test_options_build_a_llama_block_with_gpt2_style_init():
    ta.manual_seed(0)
    model = nn.GPT(llama_config(n_layer=3))
    block = model.blocks[0]
    assert isinstance(block.ln1, nn.RMSNorm) and isinstance(model.ln_f, nn.RMSNorm)
    assert isinstance(block.mlp, nn.SwiGLU) and block.mlp.w1.out_features == 88
    assert model.pos_emb is None and block.attn.rotary is not None
    names = [n for n, _ in model.named_parameters()]
    assert not any(n.endswith(".bias") for n in names)                # bias=False everywhere
    assert "blocks.0.mlp.w3.weight" in names and "lm_head.weight" in names
    residual = 0.02 / np.sqrt(2 * 3)             # w2 writes into the residual stream
    assert abs(block.mlp.w2.weight.numpy().std() - residual) < 0.15 * residual
    assert abs(block.mlp.w1.weight.numpy().std() - 0.02) < 0.003
    default = nn.GPT(llama_config(norm="layernorm", mlp="feedforward"))
    assert isinstance(default.blocks[0].ln1, nn.LayerNorm)
    assert isinstance(default.blocks[0].mlp, nn.FeedForward)


@needs_silu
@pytest.mark.parametrize("n_kv_head", KV_HEADS)
def test_llama_style_gpt_gradcheck_float64(n_kv_head):
    ta.manual_seed(1)
    model = nn.GPT(llama_config(d_model=8, n_head=2, n_layer=1, block_size=4, vocab_size=5,
                                n_kv_head=None if n_kv_head is None else 1)).double()
    rng = np.random.default_rng(3)
    for p in model.parameters():                 # larger weights: every path carries signal
        p.data = rng.standard_normal(p.shape) * 0.5
    x, y = rng.integers(0, 5, (2, 4)), rng.integers(0, 5, (2, 4))
    assert ta.gradcheck(lambda *_: model(x, y)[1], list(model.parameters()))


def _train_reverse(n_kv_head, steps=500, seed=0):
    """The toy task of `python -m tinyattn train` with a Llama-style model half the default's
    width. With lr 5e-3, 500 steps reached 1.0 held-out exact match on seeds 0 to 4, with and
    without grouped-query attention (about 7 s each on one core). Measured misses: lr 3e-3
    gave 0.46 on seed 0 with n_kv_head=2, and 300 steps gave 0.73 on seed 1."""
    task = make_task("reverse")
    ta.manual_seed(seed)
    model = nn.GPT(llama_config(vocab_size=len(task.vocab), block_size=task.block_size,
                                n_kv_head=n_kv_head))
    opt = optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01, betas=(0.9, 0.98))
    sched = optim.WarmupCosineLR(opt, warmup_steps=30, total_steps=steps, eta_min=5e-4)
    eval_x, eval_y, eval_keys = task.heldout(500, seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x, y = task.sample(rng, 64, exclude=eval_keys)
        _, loss = model(ta.tensor(x), ta.tensor(y), ignore_index=IGNORE)
        opt.zero_grad()
        loss.backward()
        optim.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    return task, model, eval_x, eval_y, evaluate(model, task, eval_x, eval_y, "cpu")


@needs_silu
def test_llama_style_gpt_learns_reverse_and_generates_with_its_kv_cache():
    # Trained once, with grouped-query attention (n_kv_head=2 of 4 heads), the variant with
    # the most paths (n_kv_head=None shares every other piece; its cache is checked below
    # untrained, which is what the cache's bookkeeping needs, in a fraction of the time).
    n_kv_head = KV_HEADS[1].values[0] if HAS_GQA else None
    task, model, eval_x, eval_y, metrics = _train_reverse(n_kv_head)
    # Chance for an 8-digit answer is 1e-8; a model that learned nothing gets 0.
    assert metrics["accuracy"] >= 0.9, metrics
    prompts = eval_x[:64, :task.prompt_len]                         # digits and the separator
    cached = model.generate(ta.tensor(prompts), task.answer_len, temperature=0)
    uncached = model.generate(ta.tensor(prompts), task.answer_len, temperature=0,
                              use_cache=False)
    assert np.array_equal(cached.numpy(), uncached.numpy())
    answers = cached.numpy()[:, task.prompt_len:]
    expected = prompts[:, :-1][:, ::-1]
    assert (answers == expected).all(axis=1).mean() >= 0.9
    if n_kv_head is not None:
        assert model.blocks[0].attn.k_proj.weight.shape == (n_kv_head * 8, 32)


@pytest.mark.parametrize("n_kv_head", KV_HEADS)
def test_llama_style_gpt_generates_the_same_with_and_without_its_kv_cache(n_kv_head):
    task = make_task("reverse")
    ta.manual_seed(1)
    model = nn.GPT(llama_config(vocab_size=len(task.vocab), block_size=task.block_size,
                                n_kv_head=n_kv_head))
    prompts, _, _ = task.heldout(16, 1)
    prompts = ta.tensor(prompts[:, :task.prompt_len])
    cached = model.generate(prompts, task.answer_len, temperature=0).numpy()
    uncached = model.generate(prompts, task.answer_len, temperature=0, use_cache=False).numpy()
    assert np.array_equal(cached, uncached)
    # negative control: the untrained model's answers are not the task's (nothing was learned)
    answers = cached[:, task.prompt_len:]
    assert not (answers == prompts.numpy()[:, :-1][:, ::-1]).all(axis=1).all()
