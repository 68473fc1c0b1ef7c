"""The entry of a process that ``torch.multiprocessing.spawn`` starts (as one MPI job,
multiprocessing/mpi_spawn.py) for a script running under ``python -m tinyattn run-torch``:
``import torch`` must be answered by tinyattn here too before the script's ``__main__`` is
re-imported, else the worker would import real PyTorch (or fail where it is absent).

    python -m tinyattn.torch_shim.spawn_child FOLDER
"""
from __future__ import annotations

import sys

from ..multiprocessing import mpi_spawn
from .finder import install


def main(folder: str) -> int:
    install()
    return mpi_spawn._child(folder)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
