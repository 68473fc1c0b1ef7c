"""The toy training script (``python -m tinyattn train``): tasks, loop, plots, progress bar."""
from __future__ import annotations

from .loop import TrainConfig, evaluate, train
from .tasks import TASKS, make_task

__all__ = ["TrainConfig", "train", "evaluate", "TASKS", "make_task"]
