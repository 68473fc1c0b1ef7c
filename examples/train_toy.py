"""The toy training script: train a small transformer on a toy task and watch attention learn.

    python examples/train_toy.py                  # reverse 8 digits, under 3 minutes on 2 cores
    python examples/train_toy.py --task chars     # a character-level language model
    python examples/train_toy.py --help           # every flag

Same as ``python -m tinyattn train``. The code lives in tinyattn/train/ (tasks.py, loop.py,
plots.py) so it is importable and tested.
"""
import sys

from tinyattn.train.cli import main

if __name__ == "__main__":
    sys.exit(main())
