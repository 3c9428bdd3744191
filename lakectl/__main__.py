"""``python -m lakectl``."""

import sys

from lakectl.cli.main import main

sys.exit(main())
