"""``python -m mpvis`` is the ``mpvis`` command."""

import sys

from mpvis.cli.main import main

sys.exit(main())
