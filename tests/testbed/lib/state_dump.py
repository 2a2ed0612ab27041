# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""state_dump.py STATE_DIR: the controller state of a state directory as JSON, read with Python's sqlite3 (not
with the collection's code), for the molecule verify playbooks: ``{"entries": [the isolation guard's claims, oldest
first], "hosts": {host: its state document}}`` from the embedded store ``<state_dir>/gpuops.db`` (docs/state.md;
before issue 36 these were isolation/history.json and hosts/<host>.json). No store: both empty."""

import json
import os
import sqlite3
import sys

CLAIM_COLUMNS = ("node", "time", "run_id", "ticket", "state", "released_at", "override_reason")


def main(state_dir):
    db = os.path.join(state_dir, "gpuops.db")
    out = {"entries": [], "hosts": {}}
    if os.path.exists(db):
        conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=30)
        try:
            sql = "SELECT %s FROM guard_claims ORDER BY id" % ", ".join(CLAIM_COLUMNS)
            out["entries"] = [dict(zip(CLAIM_COLUMNS, r)) for r in conn.execute(sql)]
            out["hosts"] = {h: json.loads(doc) for h, doc in conn.execute("SELECT host, doc FROM host_state")}
        finally:
            conn.close()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
