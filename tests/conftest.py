# Shared pytest setup: make the collection importable as ansible_collections.gpuops.cluster.
from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
_link = os.path.join(BUILD, "ansible_collections", "gpuops", "cluster")
if not os.path.exists(_link):
    os.makedirs(os.path.dirname(_link), exist_ok=True)
    os.symlink(os.path.join("..", "..", ".."), _link)
if BUILD not in sys.path:
    sys.path.insert(0, BUILD)

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
SAMPLES = os.path.normpath(os.path.join(ROOT, "..", "shared", "reference", "samples"))
