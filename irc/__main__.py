"""``python -m irc`` runs the ``irc`` command."""

import sys

from .cli import main

sys.exit(main())
