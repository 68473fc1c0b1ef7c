"""``python -m tinyattn.exercises``: see ``cli.py``."""
from .cli import main

raise SystemExit(main())
