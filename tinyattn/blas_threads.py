"""The thread count of the BLAS NumPy loaded (OpenBLAS, MKL or BLIS), set and read through
ctypes: ``torch.set_num_threads`` / ``get_num_threads`` under ``run-torch``. tinyattn has no
thread pool of its own; its only threads are the BLAS's (matrix products).

The library is found among the shared objects this process has mapped (/proc/self/maps, on
Linux), and called by the names each BLAS exports, with the symbol suffixes of NumPy's own
OpenBLAS builds (``scipy_openblas_set_num_threads64_``). No dependency: where no library or
no symbol is found, ``find()`` returns None and the callers say so.
"""
from __future__ import annotations

import ctypes
import os
import re
from typing import Callable, List, Optional, Tuple

__all__ = ["find", "set_threads", "get_threads"]

# (setter, getter) names by family; OpenBLAS builds add a prefix and a suffix (scipy_, 64_).
_NAMES = [("openblas_set_num_threads", "openblas_get_num_threads"),
          ("MKL_Set_Num_Threads", "MKL_Get_Max_Threads"),
          ("bli_thread_set_num_threads", "bli_thread_get_num_threads")]
_DECORATIONS = ["{}", "scipy_{}64_", "scipy_{}_64_", "{}64_", "{}_64_"]
_LIBRARY = re.compile(r"(openblas|mkl_rt|libmkl|blis)[^/]*\.(so|dylib)", re.IGNORECASE)


def _mapped_libraries() -> List[str]:
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths if _LIBRARY.search(os.path.basename(p)))


def find() -> Optional[Tuple[Callable[[int], None], Callable[[], int]]]:
    """(set, get) of the loaded BLAS's thread count, or None where none is found."""
    import numpy  # noqa: F401 - loads the BLAS, so that it is mapped
    for path in _mapped_libraries():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for setter, getter in _NAMES:
            for decoration in _DECORATIONS:
                set_fn = getattr(library, decoration.format(setter), None)
                get_fn = getattr(library, decoration.format(getter), None)
                if set_fn is not None and get_fn is not None:
                    set_fn.argtypes, set_fn.restype = [ctypes.c_int], None
                    get_fn.argtypes, get_fn.restype = [], ctypes.c_int
                    return (lambda n, f=set_fn: f(int(n))), (lambda f=get_fn: int(f()))
    return None


def set_threads(n: int) -> bool:
    """Set the BLAS's threads to n; False where no BLAS control was found."""
    found = find()
    if found is None:
        return False
    found[0](n)
    return True


def get_threads() -> Optional[int]:
    """The BLAS's thread count, or None where no BLAS control was found."""
    found = find()
    return None if found is None else found[1]()
