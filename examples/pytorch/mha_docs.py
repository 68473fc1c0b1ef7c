"""torch.nn.MultiheadAttention as its documentation shows it: self-attention in the default
(L, N, E) layout, the averaged attention weights, batch_first, cross-attention with kdim and
vdim, a key_padding_mask (True = padding) and a causal float attn_mask; forward and
backward.

Adapted from PyTorch's documentation of nn.MultiheadAttention
(multihead_attn = nn.MultiheadAttention(embed_dim, num_heads);
 attn_output, attn_output_weights = multihead_attn(query, key, value)).
"""
import torch
import torch.nn as nn

embed_dim, num_heads = 16, 4
L, S, N = 5, 7, 3

multihead_attn = nn.MultiheadAttention(embed_dim, num_heads).double()
print([(name, list(p.shape)) for name, p in multihead_attn.named_parameters()])

query = torch.randn(L, N, embed_dim, dtype=torch.float64)
key = torch.randn(S, N, embed_dim, dtype=torch.float64)
value = torch.randn(S, N, embed_dim, dtype=torch.float64)
attn_output, attn_output_weights = multihead_attn(query, key, value)
print("output", list(attn_output.shape), attn_output.sum().item(), attn_output[0, 0, :4].tolist())
print("weights", list(attn_output_weights.shape), attn_output_weights[0, 0].tolist())

# A padded batch: the last two keys of sample 1 are padding (True = ignore them).
key_padding_mask = torch.zeros(N, S, dtype=torch.bool)
key_padding_mask[1, -2:] = True
out, weights = multihead_attn(query, key, value, key_padding_mask=key_padding_mask,
                              average_attn_weights=False)
print("padded", list(weights.shape), weights[1, 0, 0].tolist())

# Causal self-attention, batch first, with the float mask nn.Transformer makes.
self_attn = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True).double()
x = torch.randn(N, L, embed_dim, dtype=torch.float64, requires_grad=True)
causal = nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
y, _ = self_attn(x, x, x, attn_mask=causal, need_weights=False)
(y ** 2).mean().backward()
print("causal", y.sum().item(), "x.grad", x.grad.sum().item(), x.grad[0, 0, :3].tolist())
print("in_proj_weight.grad", self_attn.in_proj_weight.grad.sum().item(),
      "out_proj.bias.grad", self_attn.out_proj.bias.grad[:3].tolist())

# Cross-attention to memories of other widths (kdim, vdim: separate projection weights).
cross = nn.MultiheadAttention(embed_dim, num_heads, kdim=6, vdim=10).double()
memory_k = torch.randn(S, N, 6, dtype=torch.float64)
memory_v = torch.randn(S, N, 10, dtype=torch.float64)
out, weights = cross(query, memory_k, memory_v)
print("cross", [name for name, _ in cross.named_parameters()], out.sum().item(),
      weights.sum(dim=-1).tolist())
