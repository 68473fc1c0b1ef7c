"""``python -m tinyattn COMMAND``: gradcheck | train | doctor | embed | attention | run-torch."""
from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
