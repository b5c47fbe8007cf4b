"""``python -m emq worker HANDLER --queue NAME [options]`` (see :mod:`emq.cli`)."""

import sys

from .cli import main

sys.exit(main())
