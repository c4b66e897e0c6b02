"""``python -m tricov``: the ``tricov`` command."""

import sys

from .cli import main

sys.exit(main())
