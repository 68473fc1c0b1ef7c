"""Exercise 24, dynamic loss scaling: GradScaler's unscale, skip and update: reference solution.

Derivation (docs/attention_systems.md#dynamic-loss-scaling)
    In float16 small gradients underflow to 0, so the loss is multiplied by a scale S
    before backward: every gradient comes out S times too large. Before the step:
        unscale: g / S for every gradient; found_inf = any element inf or NaN
        a step with found_inf is SKIPPED (the parameters keep their values)
    and the scale adapts (torch.amp.GradScaler.update, torch's semantics):
        found_inf:  S <- S * backoff_factor, growth_tracker <- 0
        otherwise:  growth_tracker += 1; when it reaches growth_interval,
                    S <- S * growth_factor (only if that is finite), growth_tracker <- 0
"""
import numpy as np


def unscale_grads(grads, scale):
    """(list of g / scale, found_inf): found_inf is True if any element is inf or NaN."""
    unscaled = [g / scale for g in grads]
    found_inf = any(not np.all(np.isfinite(g)) for g in unscaled)
    return unscaled, found_inf


def update_scale(scale, growth_tracker, found_inf, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000):
    """GradScaler's update rule: returns (scale, growth_tracker)."""
    if found_inf:
        return scale * backoff_factor, 0
    growth_tracker += 1
    if growth_tracker == growth_interval:
        grown = scale * growth_factor
        return (grown if np.isfinite(grown) else scale), 0
    return scale, growth_tracker


def scaler_step(params, scaled_grads, scale, growth_tracker, lr, growth_interval=2000):
    """One SGD step with loss scaling: unscale, step unless found_inf, update the scale.
    params: a list of arrays, changed in place. Returns (scale, growth_tracker, skipped)."""
    grads, found_inf = unscale_grads(scaled_grads, scale)
    if not found_inf:
        for p, g in zip(params, grads):
            p -= lr * g
    scale, growth_tracker = update_scale(scale, growth_tracker, found_inf,
                                         growth_interval=growth_interval)
    return scale, growth_tracker, found_inf
