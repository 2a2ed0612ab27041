# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real `ansible-playbook gpuops.cluster.incident` against an embedded store (issue 15; no test bed needed):
steps, refusals, the list, and outside text that is stored literally or refused, never templated."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import sqlalchemy as sa

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import ledger as _ledger
from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import open_store

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
INJECT = '{{ lookup("pipe", "id") }}'


def _play(state: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_LOCALHOST_WARNING="False",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
        GPUOPS_STATE_DIR=str(state),
    )
    env.pop("GPUOPS_AUDIT_LOG", None)
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "gpuops.cluster.incident"]
    return subprocess.run(cmd + list(extra), capture_output=True, text=True, env=env, timeout=120, check=False)


def _events(store, iid):
    t = _ledger.tables()["incident_events"]
    with store.read() as conn:
        return [tuple(r) for r in conn.execute(sa.select(t.c.step, t.c.detail).where(t.c.incident_id == iid))]


def test_the_incident_command(tmp_path):
    state = tmp_path / "state"
    store = open_store(state_dir=str(state))
    finding = {"check": "gpu.xid", "severity": "P1", "component": "gpu:3", "code": "79", "id": "n1:gpu.xid:3:79"}
    rep = {
        "generated_at": "2026-10-05T08:00:00Z",
        "summary": {"cluster_findings": []},
        "nodes": {"n1": {"status": "faulty", "findings": [finding]}},
    }
    iid = _ledger.record_run(store, rep)["incidents_opened"][0]
    ack = ["-e", "gpuops_incident=%s" % iid, "-e", "gpuops_incident_by=alice"]

    proc = _play(state, *ack, "-e", "gpuops_incident_step=acknowledge")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "incident %s acknowledged" % iid in proc.stdout

    # a template given with -e is refused before anything runs; nothing is stored, nothing executed
    proc = _play(state, *ack, "-e", "gpuops_incident_step=locate", "-e", "gpuops_incident_cause=%s" % INJECT)
    assert proc.returncode != 0
    assert "gpuops_incident_cause" in proc.stdout + proc.stderr and "uid=" not in proc.stdout + proc.stderr
    assert [e[0] for e in _events(store, iid)] == ["detected", "acknowledged"]

    # the same text marked as data (as the ticket hook and AWX pass it) is stored literally
    extra = tmp_path / "cause.yml"
    extra.write_text("gpuops_incident_cause: !unsafe '%s'\n" % INJECT, encoding="utf-8")
    proc = _play(state, *ack, "-e", "gpuops_incident_step=locate", "-e", "@%s" % extra)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert ("located", INJECT) in _events(store, iid) and "uid=" not in proc.stdout

    proc = _play(state, *ack, "-e", "gpuops_incident_step=close")
    assert proc.returncode != 0 and "not restored yet: restore it before 'close'" in proc.stdout

    proc = _play(state, "-e", "gpuops_incident_step=list")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "%s P1 n1 detected 2026-10-05T08:00:00Z [acknowledged, located]" % iid in proc.stdout
