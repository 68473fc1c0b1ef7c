"""Named results as torch gives them: ``torch.max(x, 0)`` is a ``torch.return_types.max``.

torch returns a named tuple (a "structseq") from the ops with several outputs: its type is
named after the op (``max``, ``sort``, ``linalg_qr``), its fields are the outputs' names and it
prints as ``torch.return_types.max(\\nvalues=tensor(...),\\nindices=tensor(...))``, one field a
line. ``return_type(name, fields)`` makes the same: a ``collections.namedtuple`` (indexing,
unpacking, ``._fields`` and equality as a tuple) that prints as torch's. The types live in this
module under their names, so a result pickles and unpickles (DataLoader workers, ``save``).
"""
from __future__ import annotations

import collections
from typing import Any, Dict, Sequence

__all__ = ["return_type"]

_TYPES: Dict[str, type] = {}


def _torch_repr(self: Any) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"torch.return_types.{type(self).__name__}(\n{fields})"


def return_type(name: str, fields: Sequence[str]) -> type:
    """The named-tuple type torch returns as ``torch.return_types.<name>`` (made once)."""
    if name in _TYPES:
        if _TYPES[name]._fields != tuple(fields):
            raise ValueError(f"return_type({name!r}): already made with fields "
                             f"{_TYPES[name]._fields}, not {tuple(fields)}")
        return _TYPES[name]
    made = collections.namedtuple(name, fields, module=__name__)
    made.__repr__ = _torch_repr
    made.__str__ = _torch_repr
    made.__doc__ = f"torch.return_types.{name}({', '.join(fields)})"
    _TYPES[name] = made
    return made


def __getattr__(name: str) -> Any:     # pickle finds a result's type by its name here
    if name in _TYPES:
        return _TYPES[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
