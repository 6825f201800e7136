"""``python -m dpevolve``: the same as the ``dpevolve`` command."""

import sys

from dpevolve.cli import main

sys.exit(main())
