"""The training run's settings (``TrainConfig``) and their checks, shared by the command line
and the Python API: a bad value is refused with a message before any work starts.

Messages name the command-line flag and the field (``--batch-size`` is ``batch_size``).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from .. import backend
from .tasks import TASKS

__all__ = ["TrainConfig", "ConfigError", "RESUME_FIELDS", "MAX_CHARS_CONTEXT",
           "DEFAULT_BLOCK_SIZE", "default_warmup", "finalize", "check_memory",
           "estimate_memory"]

# What a resumed run takes from its checkpoint; asking for another value is an error, since
# the run would no longer be the one that was saved. (steps has its own rules: train().)
RESUME_FIELDS = ("task", "d_model", "heads", "layers", "dropout", "pos_encoding", "attn_impl",
                 "dtype", "block_size", "lr", "warmup", "batch_size", "seed")
MAX_CHARS_CONTEXT = 2048
DEFAULT_BLOCK_SIZE = 64           # the chars task's context when --block-size is not given
_POS_ENCODINGS = ("learned", "sinusoidal", "rope", "alibi", "t5", "none")


class ConfigError(ValueError):
    """A training setting, or a combination of them, that cannot work."""


@dataclass
class TrainConfig:
    task: str = "reverse"
    steps: int = 500
    batch_size: int = 64
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    lr: float = 3e-3
    warmup: Optional[int] = None  # None: default_warmup(steps), 100 for the default 500 steps
    weight_decay: float = 0.01
    dropout: float = 0.0
    pos_encoding: str = "learned"
    attn_impl: str = "plain"
    checkpointing: bool = False   # gradient checkpointing, one segment per block
    block_size: Optional[int] = None   # context length, chars task only (None: 64)
    seed: int = 0
    device: str = "cpu"
    dtype: str = "float32"
    eval_every: int = 100
    eval_size: int = 1000
    save_every: int = 100         # periodic checkpoint every N steps; 0: only at the end
    overwrite: bool = False       # replace a different run already in ``out``
    out: Optional[str] = None
    quiet: bool = False
    extra: Dict[str, Any] = field(default_factory=dict)


def default_warmup(steps: int) -> int:
    """Warm-up that scales with the run: a fifth of it, at most 100 steps (100 of 500)."""
    return min(100, steps // 5)


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')} ({name})"


def _whole(config: TrainConfig, name: str, low: int) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{_flag(name)} must be a whole number, got {value!r}")
    if value < low:
        raise ConfigError(f"{_flag(name)} must be at least {low}, got {value}")


def _real(config: TrainConfig, name: str, low: float, high: float = math.inf,
          low_open: bool = False, high_open: bool = True) -> None:
    value = getattr(config, name)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{_flag(name)} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{_flag(name)} must be a finite number, got {value}")
    above = value > low if low_open else value >= low
    below = value < high if high_open else value <= high
    if not (above and below):
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        raise ConfigError(f"{_flag(name)} must be in {left}{low}, {high}{right}, got {value}")


def _choice(config: TrainConfig, name: str, choices: Any) -> None:
    value = getattr(config, name)
    if value not in choices:
        raise ConfigError(f"{_flag(name)} must be one of {', '.join(map(str, choices))}; got "
                          f"{value!r}")


def finalize(config: TrainConfig) -> None:
    """Check every setting and fill in the defaults that depend on others (warm-up, context);
    raise ``ConfigError`` naming the first bad one."""
    _choice(config, "task", list(TASKS))
    for name in ("steps", "batch_size", "d_model", "heads", "layers", "eval_every",
                 "eval_size"):
        _whole(config, name, 1)
    for name in ("save_every", "seed"):
        _whole(config, name, 0)
    _real(config, "lr", 0.0, low_open=True)
    _real(config, "weight_decay", 0.0)
    _real(config, "dropout", 0.0, 1.0)
    _choice(config, "pos_encoding", _POS_ENCODINGS)
    _choice(config, "attn_impl", ("plain", "composed", "tiled", "local", "performer"))
    _choice(config, "dtype", ("float32", "float64"))
    if config.warmup is None:
        config.warmup = default_warmup(config.steps)
    _whole(config, "warmup", 0)
    if config.warmup >= config.steps:
        raise ConfigError(f"--warmup {config.warmup} must be less than --steps {config.steps}, "
                          f"to leave steps for the cosine decay")
    if config.task != "chars":
        if config.block_size is not None:
            raise ConfigError(f"--block-size sets the context of --task chars only; the "
                              f"'{config.task}' task has a fixed length, so leave it out")
    else:
        if config.block_size is None:
            config.block_size = DEFAULT_BLOCK_SIZE
        _whole(config, "block_size", 1)
        if config.block_size > MAX_CHARS_CONTEXT:
            raise ConfigError(f"--block-size {config.block_size} is too long for the chars "
                              f"text; use at most {MAX_CHARS_CONTEXT}")
    _check_combination(config)


def _check_combination(config: TrainConfig) -> None:
    """Settings that are fine alone but not together."""
    if config.d_model % config.heads != 0:
        raise ConfigError(f"--d-model {config.d_model} must be divisible by --heads "
                          f"{config.heads}")
    if config.pos_encoding == "rope" and (config.d_model // config.heads) % 2 != 0:
        raise ConfigError(f"--pos-encoding rope rotates pairs of features, so d_model / heads "
                          f"= {config.d_model // config.heads} must be even")
    if config.attn_impl not in ("plain", "composed") and config.dropout > 0:
        raise ConfigError(f"--attn-impl {config.attn_impl} has no attention dropout; use "
                          f"--dropout 0 with it")
    if config.attn_impl not in ("plain", "composed") and config.pos_encoding in ("alibi", "t5"):
        raise ConfigError(f"--pos-encoding {config.pos_encoding} adds a bias to the scores, "
                          f"which only --attn-impl plain (or composed) supports")


def estimate_memory(config: TrainConfig, vocab: int, context: int) -> Dict[str, int]:
    """A lower estimate of what training needs, in bytes: the parameters with their gradients
    and two Adam moments (4 copies), and the activations one step keeps for its backward
    (per layer about 16 (B, S, D) arrays and 3 (B, h, S, S) ones; 3 (B, S, V) for the
    logits). Python ints, so absurd sizes cannot overflow."""
    d, layers, batch = config.d_model, config.layers, config.batch_size
    item = 4 if config.dtype == "float32" else 8
    params = vocab * d + context * d + layers * (12 * d * d + 13 * d) + 2 * d
    activations = layers * (16 * batch * context * d + 3 * batch * config.heads * context ** 2)
    activations += 3 * batch * context * vocab
    return {"parameters": params, "bytes": item * (4 * params + activations)}


def _gib(size: int) -> str:
    return f"{size / 2 ** 30:.3g} GiB"


def check_memory(config: TrainConfig, vocab: int, context: int) -> None:
    """Refuse a model that cannot fit, before building it (a MemoryError, or a machine
    swapping to a halt, would come much later and say much less)."""
    need = estimate_memory(config, vocab, context)
    have = backend.memory_bytes(config.device)
    if have is not None and need["bytes"] > have:
        raise ConfigError(
            f"this model would need at least {_gib(need['bytes'])} to train "
            f"({need['parameters']:,} parameters with --d-model {config.d_model}, --layers "
            f"{config.layers}; activations for --batch-size {config.batch_size}) but "
            f"{config.device} has {_gib(have)}; use a smaller --d-model, --layers or "
            f"--batch-size")
