"""The attention-kernel switches and matmul precision (tinyattn/kernels.py): which kernel runs,
and torch 2.13's CPU behaviour where a request cannot be met."""
from __future__ import annotations

import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import kernels
from tinyattn.kernels import SDPBackend, sdp_kernel, sdpa_kernel
from tinyattn.ops.tiled_attention import TiledAttention

B = SDPBackend
CASES = [("math", [B.MATH]), ("flash", [B.FLASH_ATTENTION]),
         ("efficient", [B.EFFICIENT_ATTENTION]), ("cudnn", [B.CUDNN_ATTENTION]),
         ("efficient+math", [B.EFFICIENT_ATTENTION, B.MATH]), ("none", [])]


def _qkv():
    rng = np.random.default_rng(0)
    return [ta.tensor(rng.standard_normal((2, 2, 6, 4)).astype(np.float32),
                      requires_grad=True) for _ in range(3)]


def _outcome(call):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            call()
            result = "ok"
        except RuntimeError as error:
            result = re.sub(r"\s+", " ", str(error)).strip()
    return result, [re.sub(r"\s+", " ", str(w.message)).split(" (Triggered")[0].strip()
                    for w in seen]


def test_each_backend_picks_its_kernel():
    q, k, v = _qkv()
    plain = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert not isinstance(plain.grad_fn, TiledAttention)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        tiled = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        assert isinstance(tiled.grad_fn, TiledAttention)
        explicit = F.scaled_dot_product_attention(q, k, v, is_causal=True, impl="plain")
        assert not isinstance(explicit.grad_fn, TiledAttention)   # an explicit impl wins
        with_weights = F.scaled_dot_product_attention(q, k, v, need_weights=True)[0]
        assert not isinstance(with_weights.grad_fn, TiledAttention)
    np.testing.assert_allclose(tiled.detach().numpy(), plain.detach().numpy(), atol=1e-6)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        assert not isinstance(F.scaled_dot_product_attention(q, k, v).grad_fn, TiledAttention)
    assert kernels.math_sdp_enabled() and kernels.flash_sdp_enabled()   # restored


def test_cpu_outcomes_match_torch():
    torch = pytest.importorskip("torch")
    from torch.nn.attention import sdpa_kernel as torch_sdpa_kernel
    from torch.nn.attention import SDPBackend as TorchBackend
    q, k, v = _qkv()
    tq = torch.tensor(q.detach().numpy())
    for name, backends in CASES:
        for dropout in (0.0, 0.3):
            ours = _outcome(lambda: _run_ours(backends, q, k, v, dropout))
            theirs = _outcome(lambda: _run_torch(torch, torch_sdpa_kernel, TorchBackend,
                                                 backends, tq, dropout))
            assert ours == theirs, (name, dropout)


def _run_ours(backends, q, k, v, dropout):
    with sdpa_kernel(backends):
        F.scaled_dot_product_attention(q, k, v, dropout_p=dropout)


def _run_torch(torch, torch_sdpa_kernel, torch_backend, backends, tq, dropout):
    with torch_sdpa_kernel([getattr(torch_backend, b.name) for b in backends]):
        torch.nn.functional.scaled_dot_product_attention(tq, tq, tq, dropout_p=dropout)


def test_deprecated_sdp_kernel_warns_as_torch():
    torch = pytest.importorskip("torch")
    q, k, v = _qkv()
    tq = torch.tensor(q.detach().numpy())
    for flags in [dict(enable_flash=False, enable_math=False, enable_mem_efficient=True),
                  dict(enable_flash=True, enable_math=False, enable_mem_efficient=False),
                  dict()]:
        def ours():
            with sdp_kernel(**flags):
                F.scaled_dot_product_attention(q, k, v)

        def theirs():
            with torch.backends.cuda.sdp_kernel(**flags):
                torch.nn.functional.scaled_dot_product_attention(tq, tq, tq)
        assert _outcome(ours) == _outcome(theirs), flags


def test_refuses_what_is_not_a_backend():
    with pytest.raises(AssertionError, match="SDPBackend"):
        sdpa_kernel("math")


def test_matmul_precision_settings_are_linked_like_torchs():
    assert kernels.get_float32_matmul_precision() == "highest"
    assert kernels.matmul.allow_tf32 is False
    try:
        kernels.matmul.allow_tf32 = True
        assert kernels.get_float32_matmul_precision() == "high"
        kernels.set_float32_matmul_precision("medium")
        assert kernels.matmul.allow_tf32 is True
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            kernels.set_float32_matmul_precision("fast")
        assert kernels.get_float32_matmul_precision() == "medium"
    finally:
        kernels.set_float32_matmul_precision("highest")


def test_run_torch_answers_the_switches(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "from torch.nn.attention import sdpa_kernel, SDPBackend\n"
        "torch.backends.cuda.matmul.allow_tf32 = True\n"
        "torch.backends.cudnn.allow_tf32 = True\n"
        "print(torch.get_float32_matmul_precision())\n"
        "q = torch.randn(1, 2, 5, 4)\n"
        "with sdpa_kernel(SDPBackend.FLASH_ATTENTION):\n"
        "    print(F.scaled_dot_product_attention(q, q, q, is_causal=True).shape)\n"
        "with torch.backends.cuda.sdp_kernel(enable_math=True, enable_flash=False):\n"
        "    print(F.scaled_dot_product_attention(q, q, q).shape)\n"
        "torch.set_float32_matmul_precision('highest')\n")
    done = subprocess.run([sys.executable, "-m", "tinyattn", "run-torch", str(script)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:3] == ["high", "torch.Size([1, 2, 5, 4])",
                                           "torch.Size([1, 2, 5, 4])"]   # as torch prints it
    assert "FutureWarning" in done.stderr


def test_cudnn_flags_read_as_torchs_defaults():
    """torch.backends.cudnn's flags under run-torch hold torch's default values (they are
    switches a script reads, not a statement that cuDNN is there: is_available() is False)."""
    torch = pytest.importorskip("torch", reason="compared with torch's defaults")
    from tinyattn.torch_shim.shim_names import CUDNN_SHIM_NAMES
    for flag in ("enabled", "deterministic", "benchmark", "allow_tf32"):
        assert CUDNN_SHIM_NAMES[flag] == getattr(torch.backends.cudnn, flag), flag
    assert CUDNN_SHIM_NAMES["is_available"]() is False
