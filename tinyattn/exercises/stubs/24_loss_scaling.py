"""Exercise 24, dynamic loss scaling: GradScaler's unscale, skip and update.

Task
    Write unscale_grads(grads, scale) -> (grads / scale, found_inf), update_scale (torch's
    GradScaler rule: backoff on inf/NaN, growth after growth_interval clean steps) and
    scaler_step: unscale, SGD step unless found_inf, update the scale.

Hints (read docs/attention_systems.md#dynamic-loss-scaling)
    1. found_inf means inf OR NaN: np.isfinite catches both.
    2. An inf/NaN step resets growth_tracker to 0 as well as backing off.
    3. Grow when the count of clean steps REACHES growth_interval, then reset it; never
       grow to inf.

Check
    python -m tinyattn.exercises check loss_scaling --path <your folder>
"""
import numpy as np


def unscale_grads(grads, scale):
    """(list of g / scale, found_inf): found_inf is True if any element is inf or NaN."""
    raise NotImplementedError("unscale_grads: write it")


def update_scale(scale, growth_tracker, found_inf, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000):
    """GradScaler's update rule: returns (scale, growth_tracker)."""
    raise NotImplementedError("update_scale: write it")


def scaler_step(params, scaled_grads, scale, growth_tracker, lr, growth_interval=2000):
    """One SGD step with loss scaling: unscale, step unless found_inf, update the scale.
    params: a list of arrays, changed in place. Returns (scale, growth_tracker, skipped)."""
    raise NotImplementedError("scaler_step: write it")
