"""generate's inputs and low-precision sampling: float16 logits sampled and filtered in
float32 (as torch's multinomial does), prompts in narrow integer dtypes, NumPy integers as
max_new_tokens."""
import numpy as np
import pytest

import tinyattn as ta
import tinyattn.nn as nn
from tinyattn.nn.generation import filtered_logits, sample_next


def test_float16_sampling_reaches_every_id():
    """A float16 cumulative sum stops growing near 2048 (1 + 1 rounds back at 2048): ids at
    or above it were never drawn."""
    logits = np.zeros((4000, 4096), dtype=np.float16)         # all equal: uniform over 4096
    picks = sample_next(logits, 1.0, generator=np.random.default_rng(0))
    assert picks.max() >= 3900 and (picks >= 2048).mean() > 0.45
    control = sample_next(logits.astype(np.float32), 1.0, generator=np.random.default_rng(0))
    assert (control >= 2048).mean() > 0.45                  # the float32 path always could


def test_float16_top_p_keeps_half_of_a_uniform_vocabulary():
    logits = np.zeros((1, 4096), dtype=np.float16)
    kept = np.isfinite(filtered_logits(logits, 1.0, top_p=0.5)).sum()
    assert kept == 2048, kept


def test_float16_gpt_generation_draws_high_ids():
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=4096, block_size=8, n_layer=1, n_head=2,
                                d_model=8)).half()
    model.lm_head.weight.data = np.zeros(model.lm_head.weight.shape, dtype=np.float16)
    out = model.generate(np.zeros((256, 1), dtype=np.int64), 2,
                         generator=np.random.default_rng(1)).numpy()
    assert (out[:, 1:] >= 2048).mean() > 0.4


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.uint16])
def test_a_narrow_integer_prompt_never_wraps_sampled_ids(dtype):
    """id 274 fed back as 18 in uint8: the ids are widened to int64."""
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=300, block_size=8, n_layer=1, n_head=2, d_model=8))
    bias = np.full(300, -1e4, dtype=np.float32)
    bias[274] = 0.0                                         # every step picks 274
    model.lm_head.weight.data = np.zeros(model.lm_head.weight.shape, dtype=np.float32)
    with ta.no_grad():
        logits_shift = ta.tensor(bias)
    model.lm_head.bias = None
    original = model.lm_head.forward
    model.lm_head.forward = lambda x: original(x) + logits_shift
    out = model.generate(np.array([[3, 7]], dtype=dtype), 3, temperature=0).numpy()
    assert out[0, 2:].tolist() == [274, 274, 274] and out.dtype == np.int64


@pytest.mark.parametrize("count", [np.int64(3), np.int32(3), np.uint8(3)])
def test_numpy_integers_are_a_number_of_tokens(count):
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=11, block_size=8, n_layer=1, n_head=2, d_model=8))
    out = model.generate(np.array([[1, 2]]), count, temperature=0)
    assert out.shape == (1, 5)
