# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""state_dump.py STATE_DIR: the controller state of a state directory as JSON for the molecule verify playbooks:
``{"entries": [the isolation guard's claims, oldest first], "hosts": {host: its state document}}``, read by
tests/integration/_state_db.py (Python's sqlite3, not the collection's code) from ``<state_dir>/gpuops.db``
(docs/state.md; before issue 36 these were isolation/history.json and hosts/<host>.json). No store: both empty."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "integration"))
import _state_db  # noqa: E402


def main(state_dir):
    hosts = {h: _state_db.host_state(state_dir, h) for h in _state_db.host_names(state_dir)}
    json.dump({"entries": _state_db.claims(state_dir), "hosts": hosts}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
