"""``tinyattn.nn.functional``: PyTorch's import path for the functional ops.

``import tinyattn.nn.functional as F`` (as ``import torch.nn.functional as F``) gives the very
module ``tinyattn.functional``, which stays the one source of truth: this file only puts that
module under the second name, so the two can never disagree.
"""
import sys

from .. import functional

sys.modules[__name__] = functional
