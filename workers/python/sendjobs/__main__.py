"""python -m sendjobs: the worker program (sendjobs.cli)."""

import sys

from .cli import main

sys.exit(main())
