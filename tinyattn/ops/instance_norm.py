"""``F.instance_norm``: each (sample, channel) normalised over its own positions; as in torch,
batch norm of the input viewed as one sample with N C channels, (N, C, *) -> (1, N C, *)
(ops/batch_norm.py holds the op and its derived backward; docs/nn.md#convolution-and-pooling).
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..autograd import no_grad
from ..tensor import Tensor
from .batch_norm import batch_norm

__all__ = ["instance_norm"]


def instance_norm(input: Tensor, running_mean: Optional[Tensor] = None,  # noqa: A002
                  running_var: Optional[Tensor] = None, weight: Optional[Tensor] = None,
                  bias: Optional[Tensor] = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """``F.instance_norm``: (N, C, *) normalised per sample and channel over *; with
    ``use_input_stats=False`` the running statistics normalise instead."""
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected an input of at least 2 dims (N, C, ...), "
                         f"got shape {input.shape}")
    spatial = int(np.prod(input.shape[2:])) if input.ndim > 2 else 1
    if use_input_stats and spatial <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    batch, channels = input.shape[0], input.shape[1]
    folded = input.reshape((1, batch * channels) + tuple(input.shape[2:]))  # (1, N C, *)

    def per_sample(t: Optional[Tensor]) -> Optional[Tensor]:
        return None if t is None else t.repeat(batch)                        # (C,) -> (N C,)
    mean_copy, var_copy = per_sample(running_mean), per_sample(running_var)
    out = batch_norm(folded, mean_copy, var_copy, per_sample(weight), per_sample(bias),
                       use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        with no_grad():        # the mean over the samples of each one's updated statistics
            running_mean.copy_(mean_copy.reshape(batch, channels).mean(0))
            running_var.copy_(var_copy.reshape(batch, channels).mean(0))
    return out.reshape(tuple(input.shape))
