"""python -m gpuops_audit == gpuops-audit."""

import sys

from gpuops_audit.cli import main

sys.exit(main())
