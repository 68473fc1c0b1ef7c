"""``tinyattn.optim.clip_grad_norm_`` and ``clip_grad_value_``: the functions of
``tinyattn.nn.utils.clip_grad`` (PyTorch's home for them, ``torch.nn.utils``), under the
name the optimisers' docs use (docs/optim.md#clipping). They live in nn/ because they act
on parameters only; optim sits above nn in the layers (docs/architecture.md)."""
from __future__ import annotations

from ..nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
