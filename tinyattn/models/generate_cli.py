"""``python -m tinyattn generate``: text from a GPT-2 checkpoint (docs/pretrained.md#gpt-2).

    python -m tinyattn generate --model models/gpt2 --prompt "The meaning of life is"
    python -m tinyattn generate --model gpt2 --prompt "Once upon a time" --temperature 0.8 \\
        --top-p 0.95 --max-new-tokens 100 --seed 1

``--model`` is a folder in the Hugging Face layout (config.json, model.safetensors,
vocab.json, merges.txt) or a Hub id with ``pip install "tinyattn[hub]"``. The continuation
is printed after the prompt; it ends early at the first ``<|endoftext|>`` the model writes.
Without ``--seed`` a seed is drawn and printed, so every run can be repeated.
"""
from __future__ import annotations

import argparse
import secrets
import sys
import time
from typing import List, Optional

import numpy as np

__all__ = ["generate_main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tinyattn generate",
                                     description="Continue a prompt with a GPT-2 checkpoint")
    parser.add_argument("--model", required=True,
                        help="folder with config.json, model.safetensors, vocab.json and "
                             "merges.txt, or a Hub id such as gpt2 (pip install "
                             "\"tinyattn[hub]\")")
    parser.add_argument("--prompt", required=True, help="the text to continue")
    parser.add_argument("--max-new-tokens", type=int, default=50)
    parser.add_argument("--temperature", type=float, default=1.0,
                        help="0 = greedy (always the most likely token); default 1.0")
    parser.add_argument("--top-k", type=int, default=None,
                        help="sample among the k most likely tokens only")
    parser.add_argument("--top-p", type=float, default=None,
                        help="sample among the most likely tokens that make up this "
                             "probability (nucleus sampling), in (0, 1]")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: drawn "
                                                               "and printed)")
    return parser


def generate_main(argv: Optional[List[str]] = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from ..nn.generation import check_sampling_options  # noqa: PLC0415
    try:
        check_sampling_options(args.max_new_tokens, args.temperature, args.top_k, args.top_p)
    except ValueError as exc:
        parser.error(str(exc).replace("generate: ", "").replace("max_new_tokens",
                                                                "--max-new-tokens"))
    if args.seed is not None and args.seed < 0:
        parser.error(f"--seed must be >= 0, got {args.seed}")
    from ..nn import GPT  # noqa: PLC0415 - loads only when used
    from .gpt2_tokenizer import GPT2Tokenizer  # noqa: PLC0415
    try:
        tokenizer = GPT2Tokenizer.from_pretrained(args.model)
        model = GPT.from_pretrained(args.model)
    except (OSError, ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if len(tokenizer) > model.config.vocab_size:
        print(f"error: the tokenizer has {len(tokenizer)} tokens but the model only "
              f"{model.config.vocab_size}; the two files come from different models",
              file=sys.stderr)
        return 1
    prompt_ids = tokenizer.encode(args.prompt)
    ids = prompt_ids
    if not ids:                        # an empty prompt: start from <|endoftext|>, as GPT-2
        if tokenizer.eos_token_id is None:
            parser.error("the prompt is empty and the vocabulary has no <|endoftext|> to "
                         "start from; give some text")
        ids = [tokenizer.eos_token_id]
    block = model.config.block_size
    if len(ids) > block:
        print(f"note: the prompt has {len(ids)} tokens; the model sees the last {block}",
              file=sys.stderr)
    seed = secrets.randbelow(2 ** 31) if args.seed is None else args.seed
    start = time.perf_counter()
    out = model.generate(np.array([ids]), args.max_new_tokens, temperature=args.temperature,
                         top_k=args.top_k, top_p=args.top_p,
                         generator=np.random.default_rng(seed))
    seconds = time.perf_counter() - start
    new = out.numpy()[0, len(ids):].tolist()
    stopped = tokenizer.eos_token_id in new
    if stopped:
        new = new[:new.index(tokenizer.eos_token_id)]
    padding = next((i for i in new if i >= len(tokenizer)), None)
    if padding is not None:           # a padded vocabulary: an id without a token
        new = new[:new.index(padding)]
        print(f"note: the model sampled id {padding}, one of the ids {len(tokenizer)} to "
              f"{model.config.vocab_size - 1} that pad its vocabulary beyond the tokenizer's "
              f"{len(tokenizer)} tokens and have no text; the text stops there",
              file=sys.stderr)
    print(tokenizer.decode(prompt_ids + new))     # one decode: no character cut in two
    end = " (stopped at <|endoftext|>)" if stopped else ""
    print(f"\n[{args.max_new_tokens} tokens generated in {seconds:.1f} s, "
          f"{args.max_new_tokens / max(seconds, 1e-9):.1f} tokens/s, seed {seed}{end}]",
          file=sys.stderr)
    return 0
