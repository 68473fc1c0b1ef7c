"""The toy training run: build the task and a small GPT, train with AdamW, evaluate, save.

Everything a run needs to continue is in its checkpoint (model, optimizer, schedule, step,
the dropout generator and the data generator, the loss history), so ``--resume`` continues
with the same numbers, bit for bit on the CPU, as a run that was never stopped.
"""
from __future__ import annotations

import json
import math
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np

from .. import backend, nn, optim
from .. import functional as F
from ..autograd import no_grad
from ..serialization import CheckpointError, atomic_write, load, save
from ..tensor import as_tensor
from . import plots
from .attention_history import AttentionHistory, attention_maps
from .expectations import warn_if_below_usual
from .plot_positional import plot_positional_encoding
from .progress import ProgressBar
from .tasks import IGNORE, make_task

__all__ = ["TrainConfig", "train", "CheckpointError", "RESUME_FIELDS"]

CHECKPOINT = "checkpoint.npz"
# What a resumed run takes from its checkpoint; asking for another value is an error, since
# the run would no longer be the one that was saved. (--steps may grow: see train().)
RESUME_FIELDS = ("task", "d_model", "heads", "layers", "dropout", "pos_encoding", "attn_impl",
                 "dtype", "block_size", "lr", "warmup", "batch_size", "seed")


@dataclass
class TrainConfig:
    task: str = "reverse"
    steps: int = 500
    batch_size: int = 64
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01
    dropout: float = 0.0
    pos_encoding: str = "learned"
    attn_impl: str = "plain"
    block_size: int = 64          # context length for the chars task
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    eval_every: int = 100
    eval_size: int = 1000
    out: Optional[str] = None
    quiet: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)


def _model_for(config: TrainConfig, vocab_size: int, block_size: int) -> nn.GPT:
    gpt_config = nn.GPTConfig(vocab_size=vocab_size, block_size=block_size,
                              n_layer=config.layers, n_head=config.heads,
                              d_model=config.d_model, dropout=config.dropout,
                              pos_encoding=config.pos_encoding, attn_impl=config.attn_impl,
                              attn_block_size=32)
    return nn.GPT(gpt_config).to(config.device, config.dtype)


def _schedule(opt: optim.Optimizer, config: TrainConfig):
    warmup = min(config.warmup, config.steps - 1)
    return optim.WarmupCosineLR(opt, warmup_steps=warmup, total_steps=config.steps,
                                eta_min=0.1 * config.lr)


def _batches(ids: np.ndarray, size: int):
    for start in range(0, len(ids), size):
        yield slice(start, start + size)


def evaluate(model: nn.GPT, task: Any, inputs: np.ndarray, targets: np.ndarray,
             device: str, batch_size: int = 250) -> Dict[str, float]:
    """Mean validation loss over scored positions, and held-out exact match where defined."""
    was_training = model.training
    model.eval()
    total_loss, total_tokens, exact = 0.0, 0, 0
    with no_grad():
        for rows in _batches(inputs, batch_size):
            x, y = as_tensor(inputs[rows], device=device), targets[rows]
            logits = model(x)                                       # (B, S, V)
            vocab = logits.shape[-1]
            flat_targets = as_tensor(y.reshape(-1), device=device)
            loss = F.cross_entropy(logits.reshape(-1, vocab), flat_targets, reduction="sum")
            scored = y != IGNORE
            total_loss += loss.item()
            total_tokens += int(scored.sum())
            if task.has_accuracy:
                guess = backend.to_host(logits._data.argmax(axis=-1))   # (B, S)
                exact += int(((guess == y) | ~scored).all(axis=1).sum())
    model.train(was_training)
    result = {"val_loss": total_loss / max(total_tokens, 1)}
    if task.has_accuracy:
        result["accuracy"] = exact / len(inputs)
    return result


def _atomic_json(path: str, data: Dict[str, Any]) -> None:
    with atomic_write(path, "w") as f:
        json.dump(data, f, indent=2)


def _save_checkpoint(path: str, config: TrainConfig, model: nn.GPT, opt: Any, sched: Any,
                     step: int, data_rng: np.random.Generator, history: Dict[str, Any]) -> None:
    save({
        "format": "tinyattn-train-checkpoint-1",
        "config": {k: getattr(config, k) for k in RESUME_FIELDS},
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "step": step,
        "rng": json.dumps(backend.get_rng_state()),
        "data_rng": json.dumps(data_rng.bit_generator.state),
        "history": json.dumps(history),
    }, path)


def _load_checkpoint(directory: str, config: TrainConfig) -> Dict[str, Any]:
    path = os.path.join(directory, CHECKPOINT)
    if not os.path.exists(path):
        raise CheckpointError(f"--resume {directory}: no {CHECKPOINT} there; point --resume at "
                              f"the --out folder of an earlier run")
    try:
        state = load(path)
    except Exception as exc:  # any failure to parse means the file is not usable
        raise CheckpointError(f"--resume {directory}: {CHECKPOINT} is corrupt or not a tinyattn "
                              f"checkpoint ({type(exc).__name__}: {exc}); delete it and start "
                              f"a new run") from None
    if not isinstance(state, dict) or state.get("format") != "tinyattn-train-checkpoint-1":
        raise CheckpointError(f"--resume {directory}: {CHECKPOINT} is not a training checkpoint")
    saved = state["config"]
    for key in RESUME_FIELDS:
        if key in config.extra.get("given", ()) and saved[key] != getattr(config, key):
            raise CheckpointError(
                f"--resume {directory}: the checkpoint was trained with {key}={saved[key]!r} "
                f"but this run asks for {getattr(config, key)!r}; drop that flag to continue "
                f"the saved run, or start a new run with another --out")
    return state


def train(config: TrainConfig) -> Dict[str, Any]:
    """Run (or resume) a training run; returns the metrics dict also written to metrics.json."""
    out = config.out or os.path.join("runs", config.task)
    resume_state = _load_checkpoint(out, config) if config.extra.get("resume") else None
    if resume_state is not None:
        for key in RESUME_FIELDS:
            setattr(config, key, resume_state["config"][key])
    os.makedirs(out, exist_ok=True)
    backend.manual_seed(config.seed)
    task = make_task(config.task)
    if config.task == "chars":
        task = type(task)(block_size=config.block_size)
    data_rng = np.random.default_rng(config.seed)
    eval_x, eval_y, eval_keys = task.heldout(config.eval_size, config.seed)
    model = _model_for(config, len(task.vocab), task.block_size)
    opt = optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay,
                      betas=(0.9, 0.98))
    sched = _schedule(opt, config)
    history: Dict[str, Any] = {"train_loss": [], "evals": []}
    start_step = 0
    if resume_state is not None:
        model.load_state_dict(resume_state["model"])
        opt.load_state_dict(resume_state["optimizer"])
        sched.load_state_dict(resume_state["scheduler"])
        # --steps may differ from the saved run's: the cosine decay is stretched (or shrunk)
        # to end at the new total, continuing from the saved learning rate schedule position.
        sched.total_steps = max(config.steps, sched.warmup_steps + 1)
        start_step = int(resume_state["step"])
        backend.set_rng_state(json.loads(str(resume_state["rng"])))
        data_rng.bit_generator.state = json.loads(str(resume_state["data_rng"]))
        history = json.loads(str(resume_state["history"]))
    checkpoint_path = os.path.join(out, CHECKPOINT)
    tokens_per_step = config.batch_size * task.block_size
    log = (lambda message: None) if config.quiet else print
    log(f"tinyattn: training a {config.layers}-layer GPT ({model.num_parameters():,} params, "
        f"d_model={config.d_model}, heads={config.heads}) on '{config.task}' for "
        f"{config.steps} steps on {config.device} ({config.dtype}); writing to {out}/")
    bar = None if config.quiet else ProgressBar(config.steps, desc=config.task, start=start_step)
    step, started = start_step, time.perf_counter()
    watch = AttentionHistory.for_run(model, task, eval_x, config.device, config.steps, step)
    with _StopOnCtrlC(bar) as stop:
        while step < config.steps and not stop.requested:
            x, y = task.sample(data_rng, config.batch_size, exclude=eval_keys)
            _, loss = model(as_tensor(x, device=config.device), as_tensor(y, device=config.device),
                            ignore_index=IGNORE)
            opt.zero_grad()
            loss.backward()
            optim.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            watch.after_step(model, step)
            history["train_loss"].append(loss.item())
            if step % config.eval_every == 0 or step == config.steps:
                history["evals"].append({"step": step, **evaluate(model, task, eval_x, eval_y,
                                                                  config.device)})
                if bar is not None:
                    bar.write(_eval_line(history["evals"][-1]))
            if bar is not None:
                elapsed = time.perf_counter() - started
                bar.update(step, loss=f"{history['train_loss'][-1]:.4f}",
                           lr=f"{sched.get_last_lr()[0]:.2e}",
                           tok_s=f"{tokens_per_step * (step - start_step) / elapsed:,.0f}")
    interrupted = stop.requested
    wall = time.perf_counter() - started
    if bar is not None:
        bar.close()
    _save_checkpoint(checkpoint_path, config, model, opt, sched, step, data_rng, history)
    if interrupted:
        print(f"\ninterrupted at step {step}: checkpoint saved to {checkpoint_path}; continue "
              f"with --resume {out}")
    metrics = _metrics(config, task, history, step, wall, tokens_per_step * (step - start_step),
                       interrupted)
    warn_if_below_usual(config, metrics, out)
    _atomic_json(os.path.join(out, "metrics.json"), metrics)
    _make_plots(out, config, task, model, eval_x, history, log)
    watch.write(out, model, step, f"{config.task}: attention while training", log)
    if config.task == "chars" and not interrupted:
        log("sample: " + _sample_text(model, task, config.device))
    return metrics


class _StopOnCtrlC:
    """Ctrl-C during training: finish the current step, then stop, so the checkpoint holds a
    whole number of steps and a resumed run continues exactly. A second Ctrl-C stops at once
    (without a checkpoint of that step)."""

    def __init__(self, bar: Optional[ProgressBar]):
        self.requested, self.bar, self.previous = False, bar, None

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        message = "Ctrl-C: finishing this step, then saving a checkpoint (again to abort)"
        if self.bar is not None:
            self.bar.write(message)
        else:
            print(message)

    def __enter__(self) -> "_StopOnCtrlC":
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


def _eval_line(entry: Dict[str, float]) -> str:
    line = f"step {entry['step']}: val loss {entry['val_loss']:.4f}"
    if "accuracy" in entry:
        line += f", held-out exact match {100 * entry['accuracy']:.1f}%"
    return line


def _metrics(config: TrainConfig, task: Any, history: Dict[str, Any], step: int, wall: float,
             tokens: int, interrupted: bool) -> Dict[str, Any]:
    last_eval = history["evals"][-1] if history["evals"] else {}
    recent = history["train_loss"][-20:]
    metrics = {
        "task": config.task, "steps": step, "interrupted": interrupted,
        "final_train_loss": float(np.mean(recent)) if recent else math.nan,
        "final_val_loss": last_eval.get("val_loss"),
        "wall_time_s": round(wall, 2),
        "tokens_per_s": round(tokens / wall, 1) if wall > 0 else None,
        "device": config.device, "dtype": config.dtype, "seed": config.seed,
        "config": {k: getattr(config, k) for k in RESUME_FIELDS if k != "block_size"} | {
            "steps": config.steps, "context_length": task.block_size},
    }
    if task.has_accuracy:
        metrics["heldout_exact_match"] = last_eval.get("accuracy")
    return metrics


def _make_plots(out: str, config: TrainConfig, task: Any, model: nn.GPT, eval_x: np.ndarray,
                history: Dict[str, Any], log) -> None:
    if not plots.have_matplotlib():
        log('plots skipped: matplotlib is not installed (pip install "tinyattn[viz]")')
        return
    plots.plot_loss(os.path.join(out, "loss.png"), history["train_loss"], history["evals"],
                    f"{config.task}: loss")
    example = plots.readable_example(task, eval_x)
    weights = attention_maps(model, example, config.device)
    plots.plot_attention(os.path.join(out, "attention.png"), weights, task.decode(example),
                         f"{config.task}: attention weights for one held-out example")
    plot_positional_encoding(os.path.join(out, "positional.png"), model, task.block_size)
    log(f"wrote {out}/loss.png, attention.png, positional.png")


def _sample_text(model: nn.GPT, task: Any, device: str, length: int = 200) -> str:
    prompt = task.encode("The ")[None, :]
    ids = model.generate(as_tensor(prompt, device=device), length, temperature=0.8, top_k=10,
                         generator=np.random.default_rng(0) if device == "cpu" else None)
    return "".join(task.decode(ids.numpy()[0]))


