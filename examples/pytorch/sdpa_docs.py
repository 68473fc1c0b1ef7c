"""torch.nn.functional.scaled_dot_product_attention against the plain implementation its
documentation gives as equivalent: no mask, causal, a boolean mask, a float mask, a custom
scale, and grouped-query attention (enable_gqa), forward and backward.

Adapted from PyTorch's documentation of F.scaled_dot_product_attention (its example runs
float16 on CUDA with (32, 8, 128, 64) inputs; here float64 on the CPU, smaller).
"""
import math

import torch
import torch.nn.functional as F


def reference_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                        scale=None, enable_gqa=False):
    """The implementation the documentation gives as equivalent."""
    L, S = query.size(-2), key.size(-2)
    scale_factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    attn_bias = torch.zeros(L, S, dtype=query.dtype, device=query.device)
    if is_causal:
        assert attn_mask is None
        temp_mask = torch.ones(L, S, dtype=torch.bool).tril(diagonal=0)
        attn_bias.masked_fill_(temp_mask.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn_bias.masked_fill_(attn_mask.logical_not(), float("-inf"))
        else:
            attn_bias = attn_mask + attn_bias
    if enable_gqa:
        key = key.repeat_interleave(query.size(-3) // key.size(-3), -3)
        value = value.repeat_interleave(query.size(-3) // value.size(-3), -3)
    attn_weight = query @ key.transpose(-2, -1) * scale_factor
    attn_weight += attn_bias
    attn_weight = torch.softmax(attn_weight, dim=-1)
    attn_weight = torch.dropout(attn_weight, dropout_p, train=True)
    return attn_weight @ value


def inputs(batch=2, heads=4, kv_heads=4, L=5, S=6, E=8):
    q = torch.rand(batch, heads, L, E, dtype=torch.float64, requires_grad=True)
    k = torch.rand(batch, kv_heads, S, E, dtype=torch.float64, requires_grad=True)
    v = torch.rand(batch, kv_heads, S, E, dtype=torch.float64, requires_grad=True)
    return q, k, v


def compare(name, **options):
    q, k, v = inputs(kv_heads=2 if options.get("enable_gqa") else 4,
                     S=5 if options.get("is_causal") else 6)
    out = F.scaled_dot_product_attention(q, k, v, **options)
    (out * torch.linspace(-1.0, 1.0, out.numel(), dtype=torch.float64).view(out.shape)).sum(
    ).backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    expected = reference_attention(q, k, v, **options)
    (expected * torch.linspace(-1.0, 1.0, expected.numel(),
                               dtype=torch.float64).view(expected.shape)).sum().backward()
    print(name, "output sum", out.sum().item(), "first row", out[0, 0, 0, :3].tolist())
    print(name, "output matches the reference:", close(out, expected))
    for label, g, t in zip("qkv", grads, (q, k, v)):
        print(name, f"sum |d{label}|", g.abs().sum().item(), "matches the reference:",
              close(g, t.grad))


def close(a, b):
    return (a - b).abs().max().item() < 1e-12


compare("plain")
compare("causal", is_causal=True)
keep = torch.rand(5, 6) > 0.3
keep[:, 0] = True                          # every query keeps at least one key
compare("bool mask", attn_mask=keep)
compare("float mask", attn_mask=torch.randn(2, 1, 5, 6, dtype=torch.float64))
compare("scale 0.3", scale=0.3)
compare("grouped-query", enable_gqa=True)
