"""The toy training script (``python -m tinyattn train``): tasks, settings, loop, checkpoints,
output folder, reports, plots, progress bar."""
from __future__ import annotations

from .config import ConfigError, TrainConfig
from .loop import CheckpointError, OutputError, TrainingDiverged, evaluate, train
from .tasks import TASKS, make_task

__all__ = ["TrainConfig", "train", "evaluate", "TASKS", "make_task", "ConfigError",
           "CheckpointError", "OutputError", "TrainingDiverged"]
