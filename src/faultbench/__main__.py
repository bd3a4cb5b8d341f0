"""`python -m faultbench`: the `faultbench` command."""

import sys

from faultbench.cli import main

sys.exit(main())
