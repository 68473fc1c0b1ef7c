"""The op-table rows of ops/more_reductions.py: NaN-skipping sums and means (with NaNs
planted), logcumsumexp, and the median and nanmedian of distinct values (a tie would share the
gradient; nanmedian with NaNs planted)."""
from __future__ import annotations

from typing import List

import numpy as np
import scipy.special as sp

from .. import ops
from .cases import distinct_cases, normal_cases
from .spec import Case, OpSpec, from_pairs

__all__ = ["ROWS"]

_SECTION = "more-reductions"


def _with_nans(rng: np.random.Generator) -> List[Case]:
    x = rng.standard_normal((3, 4))
    x[0, 1] = x[2, 3] = np.nan
    return [("(3, 4) two NaNs", (x,))]


def _log_cumsum_exp(x: np.ndarray) -> np.ndarray:
    return np.stack([sp.logsumexp(x[:, : i + 1], axis=1) for i in range(x.shape[1])], axis=1)


def _lower_nanmedian(x: np.ndarray) -> np.ndarray:
    kept = np.sort(x[~np.isnan(x)])                   # torch's nanmedian: the lower middle
    return kept[(kept.size - 1) // 2]                 # of the values that are not NaN


ROWS: List[OpSpec] = from_pairs([
    ("nansum", lambda x: ops.nansum(x, 1), lambda x: np.nansum(x, 1), _with_nans, _SECTION),
    ("nanmean", lambda x: ops.nanmean(x, 1), lambda x: np.nanmean(x, 1), _with_nans, _SECTION),
    ("logcumsumexp", lambda x: ops.logcumsumexp(x, 1), _log_cumsum_exp,
     normal_cases((3, 5), scale=3.0), _SECTION),
    ("median_all", ops.median, lambda x: np.sort(x.ravel())[(x.size - 1) // 2],
     distinct_cases((3, 4)), _SECTION),
    ("nanmedian_all", ops.nanmedian, _lower_nanmedian, _with_nans, _SECTION),
])
