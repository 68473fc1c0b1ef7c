"""``python -m tinyattn.exercises``: see ``cli.py``."""
from ..console import quiet_on_broken_pipe
from .cli import main

raise SystemExit(quiet_on_broken_pipe(main))
