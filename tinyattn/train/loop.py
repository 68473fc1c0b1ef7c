"""The toy training run: build the task and a small GPT, train with AdamW, evaluate, save.

Everything a run needs to continue is in its checkpoint (checkpoint.py), so ``--resume``
continues with the same numbers, bit for bit on the CPU, as a run that was never stopped.
What survives what:

* Ctrl-C (SIGINT) or SIGTERM: the current step finishes, a checkpoint of it is saved, the run
  exits non-zero (130 / 143); a second signal aborts at once (the last checkpoint remains).
* A crash or SIGKILL: the last periodic checkpoint (every ``save_every`` steps) remains;
  checkpoints are written atomically, so a kill during a save leaves the previous one.
* A loss or gradient norm that becomes NaN or infinite: the run stops before that update,
  names the step, exits non-zero and leaves the last periodic checkpoint.

Everything that can be checked before the first step is: the settings (config.py), the
memory the model needs, and the output folder (outdir.py).
"""
from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from typing import Any, Dict, Optional

import numpy as np

from .. import backend, nn, optim
from .. import functional as F
from ..autograd import no_grad
from ..tensor import as_tensor
from . import checkpoint, outdir, report
from .attention_history import AttentionHistory
from .checkpoint import CHECKPOINT, CheckpointError
from .config import RESUME_FIELDS, ConfigError, TrainConfig, check_memory, finalize
from .expectations import warn_if_below_usual
from .history import record_eval, record_loss
from .outdir import OutputError
from .parallel import Ranks
from .progress import ProgressBar, say
from .tasks import IGNORE, make_task

__all__ = ["TrainConfig", "train", "evaluate", "CheckpointError", "ConfigError", "OutputError",
           "TrainingDiverged", "Aborted", "RESUME_FIELDS"]


class TrainingDiverged(RuntimeError):
    """The loss or the gradient norm became NaN or infinite; the run stopped before using it."""


class Aborted(KeyboardInterrupt):
    """A second Ctrl-C / SIGTERM: stop at once, without saving this step."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _notice(message: str) -> None:
    """Something the user must see even with --quiet (standard error)."""
    say(message, sys.stderr)


def _model_for(config: TrainConfig, vocab_size: int, block_size: int) -> nn.GPT:
    gpt_config = nn.GPTConfig(vocab_size=vocab_size, block_size=block_size,
                              n_layer=config.layers, n_head=config.heads,
                              d_model=config.d_model, dropout=config.dropout,
                              pos_encoding=config.pos_encoding, attn_impl=config.attn_impl,
                              attn_block_size=32,
                              gradient_checkpointing=config.checkpointing)
    return nn.GPT(gpt_config).to(config.device, config.dtype)


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


def _merge_resumed(config: TrainConfig, state: Dict[str, Any], out: str
                   ) -> Optional[Dict[str, int]]:
    """Take the saved run's settings; refuse a flag that contradicts them. Without --steps
    the run trains to the saved total; with another total, return the schedule change."""
    given = set(config.extra.get("given", ()))
    saved = checkpoint.saved_settings(state)
    for key in RESUME_FIELDS:
        if key in given and saved[key] != getattr(config, key):
            raise CheckpointError(
                f"--resume {out}: the checkpoint was trained with {key}={saved[key]!r} "
                f"but this run asks for {getattr(config, key)!r}; drop that flag to continue "
                f"the saved run, or start a new run with another --out")
        setattr(config, key, saved[key])
    for key in checkpoint.KEPT_ON_RESUME:       # --eval-every / --save-every, unless given
        if key not in given and key in state["config"]:
            setattr(config, key, state["config"][key])
    step, total, change = state["step"], saved["steps"], None
    if "steps" in given and config.steps != total:
        if config.steps < step:
            raise CheckpointError(
                f"--resume {out}: --steps {config.steps} is below step {step}, where the saved "
                f"run already is, and a run cannot go back; leave out --steps to finish the "
                f"saved run ({total} steps), or give a larger number")
        if config.steps <= saved["warmup"]:
            raise CheckpointError(
                f"--resume {out}: --steps {config.steps} must be more than the saved run's "
                f"warm-up ({saved['warmup']} steps), to leave steps for the cosine decay")
        change = {"at_step": step, "from_total": total, "to_total": config.steps}
    else:
        config.steps = total
    try:
        finalize(config)
    except ConfigError as exc:
        raise checkpoint.damaged(out, f"holds settings that cannot be used ({exc})") from None
    return change


def _announce(change: Dict[str, int], lr_before: float, lr_after: float) -> None:
    _notice(f"note: --steps {change['to_total']} changes the saved run's total of "
            f"{change['from_total']} steps. The cosine learning-rate schedule is recomputed to "
            f"end at step {change['to_total']}: the next update (step {change['at_step'] + 1}) "
            f"uses a learning rate of {lr_after:.3e} instead of {lr_before:.3e}, and this run "
            f"follows neither the saved {change['from_total']}-step run nor a fresh "
            f"{change['to_total']}-step run. metrics.json records it under 'schedule_changes'.")


class _Run:
    """One training session: the objects, the step, and saving them together."""

    def __init__(self, config: TrainConfig, out: str, task: Any,
                 state: Optional[Dict[str, Any]], change: Optional[Dict[str, int]],
                 ranks: Optional[Ranks] = None):
        self.config, self.out, self.task = config, out, task
        self.ranks = ranks if ranks is not None else Ranks(from_environment=False)
        backend.manual_seed(config.seed)
        self.data_rng = self.ranks.data_rng(config.seed)
        self.eval_x, self.eval_y, self.eval_keys = task.heldout(config.eval_size, config.seed)
        self.model = _model_for(config, len(task.vocab), task.block_size)
        self.net = self.ranks.wrap(self.model)       # DistributedDataParallel with --nproc
        self.opt = optim.AdamW(self.model.parameters(), lr=config.lr,
                               weight_decay=config.weight_decay, betas=(0.9, 0.98))
        self.sched = optim.WarmupCosineLR(
            self.opt, warmup_steps=config.warmup, eta_min=0.1 * config.lr,
            total_steps=change["from_total"] if change else config.steps)
        self.history: Dict[str, Any] = {"train_loss": [], "evals": [], "wall_time_s": 0.0,
                                        "tokens": 0}
        self.step = 0
        if state is not None:
            checkpoint.restore(state, out, self.model, self.opt, self.sched, self.data_rng)
            self.step, self.history = state["step"], {**self.history, **state["history"]}
            if change is not None:
                lr_before = self.sched.get_last_lr()[0]
                self.sched.total_steps = change["to_total"]
                self.sched.last_epoch -= 1       # recompute this step's rate on the new curve
                self.sched.step()
                self.history.setdefault("schedule_changes", []).append(change)
                _announce(change, lr_before, self.sched.get_last_lr()[0])
        self.start_step, self.saved_step = self.step, (self.step if state else None)
        self.wall_before, self.tokens_before = self.history["wall_time_s"], self.history["tokens"]
        self.tokens_per_step = config.batch_size * task.block_size
        self.watch = AttentionHistory.for_run(self.model, task, self.eval_x, config.device,
                                              config.steps, self.step)
        self.started = time.perf_counter()

    def train_step(self) -> float:
        """One update; raises TrainingDiverged (before updating) on a non-finite value."""
        config = self.config
        x, y = self.task.sample(self.data_rng, self.ranks.batch_size(config.batch_size),
                                exclude=self.eval_keys)
        _, loss = self.net(as_tensor(x, device=config.device),
                           as_tensor(y, device=config.device),
                           ignore_index=IGNORE)
        value = self.ranks.mean(loss.item())
        if not math.isfinite(value):
            self._diverged("the training loss", value)
        self.opt.zero_grad()
        loss.backward()
        norm = optim.clip_grad_norm_(self.model.parameters(), 1.0).item()
        if not math.isfinite(norm):
            self._diverged("the gradient norm", norm)
        self.opt.step()
        self.sched.step()
        self.step += 1
        record_loss(self.history, value, self.step)
        return value

    def _diverged(self, what: str, value: float) -> None:
        step, lr = self.step + 1, self.sched.get_last_lr()[0]
        self.diverged = {"step": step, "what": what, "value": str(value), "lr": lr}
        saved = (f"The last checkpoint (step {self.saved_step}) is in {self.out}/, but resuming "
                 f"it repeats the same steps" if self.saved_step is not None
                 else "No checkpoint was saved")
        raise TrainingDiverged(
            f"{what} became {value} at step {step} (learning rate {lr:.3e}); the run stopped "
            f"before that update. {saved}. Start a new run with a lower --lr (this one: "
            f"{self.config.lr}) or a longer --warmup")

    def evaluate(self) -> Dict[str, float]:
        entry = {"step": self.step, **evaluate(self.model, self.task, self.eval_x, self.eval_y,
                                                self.config.device)}
        record_eval(self.history, entry)
        return entry

    def save(self) -> None:
        self.history["wall_time_s"] = self.wall_before + self.elapsed()
        self.history["tokens"] = (self.tokens_before
                                  + self.tokens_per_step * (self.step - self.start_step))
        checkpoint.save_checkpoint(os.path.join(self.out, CHECKPOINT), self.config, self.model,
                                   self.opt, self.sched, self.step, self.data_rng, self.history)
        self.saved_step = self.step

    def elapsed(self) -> float:
        return time.perf_counter() - self.started


def _prepare(config: TrainConfig, held: list):
    """Everything checked before any work: settings, output folder (held by this run from
    here on: its lock goes into ``held``), memory."""
    state = change = None
    if config.extra.get("resume"):
        out = config.out or os.path.join("runs", config.task)
        if os.path.isdir(out):
            held.append(outdir.lock_folder(out))
        state = checkpoint.read(out)
        change = _merge_resumed(config, state, out)
    else:
        finalize(config)
        out = outdir.choose(config, _notice)
    task = make_task(config.task)
    if config.task == "chars":
        task = type(task)(block_size=config.block_size)
    check_memory(config, len(task.vocab), task.block_size)
    outdir.check_writable(out)
    if state is None:
        held.append(outdir.lock_folder(out))
        if outdir.choose(config, lambda message: None) != out:   # again, now that it is ours
            raise OutputError(f"{out}/ changed while this run started (another run wrote "
                              f"there); run the command again")
    if config.overwrite and state is None:
        outdir.clear_run(out)
    return out, task, state, change


def train(config: TrainConfig) -> Dict[str, Any]:
    """Run (or resume) a training run; returns the metrics dict also written to metrics.json.
    Raises ConfigError, OutputError or CheckpointError before any step when something cannot
    work, TrainingDiverged when the loss stops being finite, Aborted on a second signal.
    The output folder is held (locked) by this run until it returns."""
    held: list = []
    try:
        return _train_in(config, held)
    finally:
        for handle in held:
            outdir.unlock_folder(handle)


def _train_in(config: TrainConfig, held: list) -> Dict[str, Any]:
    ranks = Ranks()
    ranks.join(config)
    try:
        return _train_ranked(config, held, ranks)
    finally:
        ranks.leave()


def _train_ranked(config: TrainConfig, held: list, ranks: Ranks) -> Dict[str, Any]:
    out, task, state, change = _prepare(config, held)
    log = (lambda message: None) if config.quiet else say
    run = _Run(config, out, task, state, change, ranks)
    if run.step >= config.steps:
        log(f"the run in {out}/ is already at step {run.step} of {config.steps}: nothing to "
            f"train (--steps N with N > {run.step} trains on)")
        return _finished_already(run, log)
    log(f"tinyattn: training a {config.layers}-layer GPT ({run.model.num_parameters():,} "
        f"params, d_model={config.d_model}, heads={config.heads}) on '{config.task}' for "
        f"{config.steps} steps on {config.device} ({config.dtype}); writing to {out}/")
    bar = None if config.quiet else ProgressBar(config.steps, desc=config.task,
                                                start=run.step)
    try:
        with _StopOnSignals() as stop:
            _loop(run, bar, stop)
            run.save()
    except TrainingDiverged:
        if bar is not None:
            bar.close()
        report.write_metrics(out, report.metrics(config, task, run.history, run.step, out,
                                                 diverged=run.diverged))
        raise
    except BaseException as exc:
        if bar is not None:
            bar.close()
        where = (f"the last checkpoint (step {run.saved_step}) is in {out}/; --resume {out} "
                 f"continues from there" if run.saved_step is not None
                 else "no checkpoint was saved yet")
        what = "aborted" if isinstance(exc, KeyboardInterrupt) else \
            f"stopped by {type(exc).__name__}"
        _notice(f"\ntraining {what} during step {run.step + 1}; {where}")
        raise
    if bar is not None:
        bar.close()
    stopped_by = stop.name if run.step < config.steps else None
    if ranks.rank != 0:                   # rank 0 writes the run's reports
        return report.metrics(config, task, run.history, run.step, out)
    if stopped_by is not None:
        say(f"\ninterrupted by {_SIGNAL_NAMES[stopped_by]} at step {run.step}: checkpoint "
            f"saved to {os.path.join(out, CHECKPOINT)}; continue with --resume {out}")
    result = report.metrics(config, task, run.history, run.step, out, stopped_by=stopped_by)
    warn_if_below_usual(config, result, out)
    report.write_metrics(out, result)
    report.make_plots(out, config, task, run.model, run.eval_x, run.history, log)
    run.watch.write(out, run.model, run.step, f"{config.task}: attention while training", log)
    if config.task == "chars" and stopped_by is None:
        log("sample: " + report.sample_text(run.model, task, config.device))
    return result


def _finished_already(run: _Run, log) -> Dict[str, Any]:
    """A resume with nothing to train changes nothing; it only writes the reports a kill
    right after the last checkpoint may have left unwritten."""
    config, out = run.config, run.out
    result = report.metrics(config, run.task, run.history, run.step, out)
    if not os.path.exists(os.path.join(out, "metrics.json")):
        report.write_metrics(out, result)
    if not all(os.path.exists(os.path.join(out, name)) for name in outdir.RUN_FILES[2:5]):
        report.make_plots(out, config, run.task, run.model, run.eval_x, run.history, log)
    if not all(os.path.exists(os.path.join(out, name)) for name in outdir.RUN_FILES[5:]):
        run.watch.write(out, run.model, run.step, f"{config.task}: attention while training",
                        log)
    return result


_SIGNAL_NAMES = {"SIGINT": "Ctrl-C (SIGINT)", "SIGTERM": "SIGTERM"}


def _loop(run: _Run, bar: Optional[ProgressBar], stop: "_StopOnSignals") -> None:
    config = run.config
    while run.step < config.steps and stop.name is None:
        loss = run.train_step()
        if run.ranks.any_stopped(stop.name is not None) and stop.name is None:
            stop.name = "SIGINT"              # another rank was signalled: stop here too
        run.watch.after_step(run.model, run.step)
        if run.step % config.eval_every == 0 or run.step == config.steps:
            entry = run.evaluate()
            if bar is not None:
                bar.write(report.eval_line(entry))
        if config.save_every and run.step % config.save_every == 0 \
                and run.step < config.steps:
            run.save()
        if bar is not None:
            tokens = run.tokens_per_step * (run.step - run.start_step)
            bar.update(run.step, loss=f"{loss:.4f}", lr=f"{run.sched.get_last_lr()[0]:.2e}",
                       tok_s=f"{tokens / max(run.elapsed(), 1e-9):,.0f}")
        if stop.name is not None and bar is not None:
            bar.write(f"{stop.name}: finishing step {run.step}, saving a checkpoint (press "
                      f"again to abort)")


class _StopOnSignals:
    """Ctrl-C (SIGINT) or SIGTERM during training: finish the current step, then stop, so the
    checkpoint holds a whole number of steps and a resumed run continues exactly. A second
    signal stops at once (``Aborted``; the last checkpoint remains)."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.name: Optional[str] = None
        self.previous: Dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.name is not None:
            raise Aborted(signum)
        self.name = signal.Signals(signum).name

    def __enter__(self) -> "_StopOnSignals":
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
