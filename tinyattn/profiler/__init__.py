"""``tinyattn.profiler``: PyTorch's ``torch.profiler`` (profile, record_function, schedule,
tensorboard_trace_handler), timing every op's forward and backward by name
(docs/precision_memory_time.md#profiling)."""
from .events import EventList, FunctionEventAvg
from .profiler import (LegacyProfile, ProfilerAction, ProfilerActivity, profile,
                       record_function, schedule, supported_activities,
                       tensorboard_trace_handler)

__all__ = ["profile", "record_function", "schedule", "tensorboard_trace_handler",
           "ProfilerActivity", "ProfilerAction", "supported_activities", "EventList",
           "FunctionEventAvg", "LegacyProfile"]
