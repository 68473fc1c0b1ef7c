"""``set_printoptions``: how tensors print (PyTorch's ``torch.set_printoptions``).

    tinyattn.set_printoptions(precision=2, sci_mode=False)

The options live in one dict that ``Tensor.__repr__`` reads through ``array2string_options``
(NumPy's ``array2string`` does the formatting). ``profile`` is one of torch's presets:
"default", "short" (2 digits, 2 edge items) or "full" (never summarise).
"""
from __future__ import annotations

import math
import sys
from typing import Any, Dict, Optional

__all__ = ["set_printoptions", "get_printoptions", "array2string_options"]

# tinyattn's defaults so far (NumPy's line width of 75; torch's is 80, its threshold 1000)
_DEFAULTS: Dict[str, Any] = {"precision": 4, "threshold": 50, "edgeitems": 3,
                             "linewidth": 75, "sci_mode": None}
_PROFILES = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
_options: Dict[str, Any] = dict(_DEFAULTS)


def set_printoptions(precision: Optional[int] = None, threshold: Optional[float] = None,
                     edgeitems: Optional[int] = None, linewidth: Optional[int] = None,
                     profile: Optional[str] = None, sci_mode: Optional[bool] = None) -> None:
    """Set how tensors print from now on; an option left None keeps its value, except
    ``sci_mode``, where None means "decide per tensor" (torch's default)."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, "
                             f"got {profile!r}")
        _options.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"set_printoptions: {name} must be a non-negative number, "
                                 f"got {value!r}")
            _options[name] = value
    _options["sci_mode"] = sci_mode


def get_printoptions() -> Dict[str, Any]:
    """The current options (a copy), as ``torch._tensor_str.PRINT_OPTS`` holds them."""
    return dict(_options)


def array2string_options() -> Dict[str, Any]:
    """Keyword arguments for ``numpy.array2string`` that print as the options say."""
    precision = int(_options["precision"])
    threshold = _options["threshold"]
    kwargs: Dict[str, Any] = {
        "precision": precision, "separator": ", ", "edgeitems": int(_options["edgeitems"]),
        "max_line_width": int(_options["linewidth"]),
        "threshold": sys.maxsize if threshold == math.inf else int(threshold)}
    if _options["sci_mode"] is True:
        kwargs["formatter"] = {"float_kind": lambda v: f"{v:.{precision}e}"}
    elif _options["sci_mode"] is False:
        kwargs["suppress_small"] = True
    return kwargs
