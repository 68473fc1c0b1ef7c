"""A GPT training step (forward, backward, AdamW) beside the same GPT written in torch."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

import tinyattn
import tinyattn.functional as F
from tinyattn import nn, optim
from tinyattn.nn.torch_compat import to_torch_state_dict

from .common import VOCAB, Case, gpt_flops, in_sequence, same, torch

__all__ = ["case_gpt", "torch_gpt"]


def torch_gpt(config: nn.GPTConfig) -> Any:
    """The same GPT in torch, written as a torch user would (nanoGPT style): packed q/k/v
    projection, F.scaled_dot_product_attention(is_causal=True), tied lm_head."""
    tnn, tF = torch.nn, torch.nn.functional
    d, h = config.d_model, config.n_head

    class Attention(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.in_proj = tnn.Linear(d, 3 * d)
            self.out_proj = tnn.Linear(d, d)

        def forward(self, x: Any) -> Any:
            b, s, _ = x.shape
            q, k, v = self.in_proj(x).split(d, dim=2)                   # 3 x (B, S, D)
            q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in (q, k, v))
            y = tF.scaled_dot_product_attention(q, k, v, is_causal=True)   # (B, h, S, d_k)
            return self.out_proj(y.transpose(1, 2).reshape(b, s, d))

    class Block(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.attn = tnn.LayerNorm(d), Attention()
            self.ln2 = tnn.LayerNorm(d)
            self.mlp = tnn.Module()
            self.mlp.linear1, self.mlp.linear2 = tnn.Linear(d, 4 * d), tnn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            x = x + self.attn(self.ln1(x))
            return x + self.mlp.linear2(tF.gelu(self.mlp.linear1(self.ln2(x))))

    class GPT(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_emb = tnn.Embedding(config.vocab_size, d)
            self.pos_emb = tnn.Module()
            self.pos_emb.weight = tnn.Parameter(torch.zeros(config.block_size, d))
            self.blocks = tnn.ModuleList([Block() for _ in range(config.n_layer)])
            self.ln_f = tnn.LayerNorm(d)
            self.lm_head = tnn.Linear(d, config.vocab_size, bias=False)
            self.lm_head.weight = self.tok_emb.weight                  # tied, as tinyattn's

        def forward(self, idx: Any, targets: Any) -> Any:
            x = self.tok_emb(idx) + self.pos_emb.weight[: idx.shape[1]]
            for block in self.blocks:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return tF.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))

    return GPT()


def case_gpt(name: str, d: int, layers: int, s: int, b: int, h: int,
             target: float = 1.0) -> Case:
    config = nn.GPTConfig(vocab_size=VOCAB, block_size=s, n_layer=layers, n_head=h, d_model=d)
    tinyattn.manual_seed(0)
    ours = nn.GPT(config)
    opt = optim.AdamW(ours.parameters(), lr=1e-3)
    rng = np.random.default_rng(2)
    idx, targets = rng.integers(0, VOCAB, size=(2, b, s))
    loss: Dict[str, Any] = {}          # each step's loss, from its forward to its backward
    phases = {"tinyattn": [
        ("forward", lambda: loss.update(ours=ours(idx, targets)[1])),
        ("backward", lambda: loss["ours"].backward()),
        ("AdamW step", lambda: (opt.step(), opt.zero_grad())),
    ]}
    if torch is not None:
        theirs = torch_gpt(config)
        state = to_torch_state_dict(ours.state_dict())
        state = {k.replace("attn.in_proj_", "attn.in_proj."): torch.from_numpy(v)
                 for k, v in state.items()}
        state["lm_head.weight"] = state["tok_emb.weight"]
        theirs.load_state_dict(state)
        t_opt = torch.optim.AdamW(theirs.parameters(), lr=1e-3)
        idx_t, targets_t = torch.from_numpy(idx), torch.from_numpy(targets)
        phases["torch"] = [
            ("forward", lambda: loss.update(torch=theirs(idx_t, targets_t))),
            ("backward", lambda: loss["torch"].backward()),
            ("AdamW step", lambda: (t_opt.step(), t_opt.zero_grad(set_to_none=True))),
        ]
    run_ours, run_torch = (in_sequence(phases[side]) if side in phases else None
                           for side in ("tinyattn", "torch"))
    if run_torch is not None:
        run_ours(), run_torch()
        same(name, loss["ours"], loss["torch"])   # the first step's loss, from equal weights
    return Case(name, f"GPT training step (fwd, bwd, AdamW), D={d} layers={layers} S={s} "
                f"B={b} h={h} V={VOCAB}", run_ours, run_torch,
                flops=gpt_flops(b, s, d, h, layers, 4 * d), target=target, phases=phases)
