"""python -m gpuops_runbook == gpuops-runbook."""

import sys

from gpuops_runbook.cli import main

sys.exit(main())
