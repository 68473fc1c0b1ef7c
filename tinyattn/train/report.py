"""What a run reports: metrics.json (always strict JSON), the eval line, the pictures and the
generated text of the chars task."""
from __future__ import annotations

import json
import math
import os
from typing import Any, Callable, Dict, Optional

import numpy as np

from .. import nn
from ..atomic import atomic_write
from ..tensor import as_tensor
from . import plots
from .attention_history import attention_maps
from .plot_positional import plot_positional_encoding
from .config import RESUME_FIELDS, TrainConfig

__all__ = ["metrics", "write_metrics", "eval_line", "make_plots", "sample_text", "strict"]


def strict(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by None, so that it is JSON (the
    standard has no NaN: Python would write the non-JSON token ``NaN``)."""
    if isinstance(value, dict):
        return {key: strict(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def metrics(config: TrainConfig, task: Any, history: Dict[str, Any], step: int, out: str,
            stopped_by: Optional[str] = None,
            diverged: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The summary written to metrics.json. Time and tokens add up over every session of a
    resumed run (the history carries them), so a resume that trains nothing changes nothing."""
    last_eval = history["evals"][-1] if history["evals"] else {}
    recent = history["train_loss"][-20:]
    wall, tokens = history.get("wall_time_s", 0.0), history.get("tokens", 0)
    result = {
        "task": config.task, "steps": step, "total_steps": config.steps,
        "interrupted": stopped_by is not None, "stopped_by": stopped_by,
        "final_train_loss": float(np.mean(recent)) if recent else None,
        "final_val_loss": last_eval.get("val_loss"),
        "wall_time_s": round(wall, 2),
        "tokens_per_s": round(tokens / wall, 1) if wall > 0 else None,
        "device": config.device, "dtype": config.dtype, "seed": config.seed, "out": out,
        "config": {k: getattr(config, k) for k in RESUME_FIELDS if k != "block_size"} | {
            "steps": config.steps, "context_length": task.block_size},
    }
    if task.has_accuracy:
        result["heldout_exact_match"] = last_eval.get("accuracy")
    if history.get("schedule_changes"):
        result["schedule_changes"] = history["schedule_changes"]
    if diverged is not None:
        result["diverged"] = diverged
    return strict(result)


def write_metrics(out: str, data: Dict[str, Any]) -> None:
    with atomic_write(os.path.join(out, "metrics.json"), "w") as f:
        json.dump(data, f, indent=2, allow_nan=False)


def eval_line(entry: Dict[str, float]) -> str:
    line = f"step {entry['step']}: val loss {entry['val_loss']:.4f}"
    if "accuracy" in entry:
        line += f", held-out exact match {100 * entry['accuracy']:.1f}%"
    return line


def make_plots(out: str, config: TrainConfig, task: Any, model: nn.GPT, eval_x: np.ndarray,
               history: Dict[str, Any], log: Callable[[str], None]) -> None:
    if not plots.have_matplotlib():
        log('plots skipped: matplotlib is not installed (pip install "tinyattn[viz]")')
        return
    plots.plot_loss(os.path.join(out, "loss.png"), history["train_loss"], history["evals"],
                    f"{config.task}: loss", history.get("train_loss_stride", 1))
    example = plots.readable_example(task, eval_x)
    weights = attention_maps(model, example, config.device)
    plots.plot_attention(os.path.join(out, "attention.png"), weights, task.decode(example),
                         f"{config.task}: attention weights for one held-out example",
                         scored_from=plots.scored_from(task))
    plot_positional_encoding(os.path.join(out, "positional.png"), model, task.block_size)
    log(f"wrote {out}/loss.png, attention.png, positional.png")


def sample_text(model: nn.GPT, task: Any, device: str, length: int = 200) -> str:
    prompt = task.encode("The ")[None, :]
    ids = model.generate(as_tensor(prompt, device=device), length, temperature=0.8, top_k=10,
                         generator=np.random.default_rng(0) if device == "cpu" else None)
    return "".join(task.decode(ids.numpy()[0]))
