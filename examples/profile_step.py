"""Where a training step's time goes: tinyattn.profiler on the toy model (the 2-layer GPT of
``python -m tinyattn train``), with torch.profiler's API
(docs/precision_memory_time.md#profiling).

    python examples/profile_step.py            # a few seconds
    python examples/profile_step.py --quick

Writes runs/profile/*.pt.trace.json (open it in https://ui.perfetto.dev or chrome://tracing)
and prints the ops by self time: every forward (aten::...) and every backward
(...Backward0), with calls, self and total time, input shapes and the bytes allocated.
"""
from __future__ import annotations

import argparse
import os

import numpy as np

import tinyattn as ta
import tinyattn.functional as F
from tinyattn import nn, optim
from tinyattn.profiler import (ProfilerActivity, profile, record_function, schedule,
                               tensorboard_trace_handler)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller batch")
    parser.add_argument("--out", default=os.path.join("runs", "profile"))
    args = parser.parse_args(argv)
    ta.manual_seed(0)
    model = nn.GPT(nn.GPTConfig(vocab_size=13, block_size=17, n_layer=2, n_head=4, d_model=64))
    opt = optim.AdamW(model.parameters(), lr=3e-3)
    batch = 16 if args.quick else 64
    rng = np.random.default_rng(0)
    ids = ta.tensor(rng.integers(0, 13, (batch, 17)))
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(args.out),
                 record_shapes=True, profile_memory=True) as prof:
        for _ in range(5):
            with record_function("forward"):
                logits = model(ids[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, 13), ids[:, 1:].reshape(-1))
            with record_function("backward"):
                opt.zero_grad()
                loss.backward()
            with record_function("optimizer"):
                opt.step()
            prof.step()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15)
    print(table)
    print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                             row_limit=5))
    traces = sorted(f for f in os.listdir(args.out) if f.endswith(".pt.trace.json"))
    print(f"trace: {os.path.join(args.out, traces[-1])} (open it in Perfetto)")
    return {"table": table, "trace": os.path.join(args.out, traces[-1])}


if __name__ == "__main__":
    main()
