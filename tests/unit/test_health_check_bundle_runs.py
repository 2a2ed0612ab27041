# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node-side health check bundle starts on its own (issue 40). Observed on the test bed: after
inspect/cluster.py began importing inspect/job_storm.py, the bundle (which ships a list of plugin_utils files)
lacked it and every run under slurmd died with ImportError before reading its configuration. Here the built
zipapp runs under a bare interpreter (-I -S: no PYTHONPATH, no site-packages; the collection is not importable) with a
configuration file that does not exist: the program must get as far as saying so (exit 2), which needs every
module it imports to be inside the archive."""

from __future__ import annotations

import subprocess
import sys

from ansible_collections.gpuops.cluster.plugins.plugin_utils.health_check import bundle


def test_bundle_imports_everything_it_needs(tmp_path):
    pyz = tmp_path / "gpuops-health-check"
    pyz.write_bytes(bundle.build({}, interpreter=sys.executable))
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(pyz), "--config", str(tmp_path / "absent.json")],
        capture_output=True, text=True, timeout=60, cwd=str(tmp_path), check=False,
    )  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "gpuops-health-check: configuration error" in proc.stderr
