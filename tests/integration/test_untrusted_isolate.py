# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/isolate.yml against real Slurm with hostile extra vars (issue 12): a Jinja lookup in
isolate_reason / isolate_ticket given as a `-e` JSON string runs nothing and isolates nothing; a bad ticket is
refused by name; the same reason marked !unsafe (as the ticket hook passes it) lands in Slurm literally."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
OPEN = {"max_share_cluster": 1, "max_share_partition": 1, "max_share_rack": 1}


def _isolate(testbed, tmp_path, *extra):
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(testbed.inventory), str(REPO / "playbooks" / "isolate.yml")]
    base = {"gpuops_state_dir": str(tmp_path / "state"), "gpuops_isolation_guard": OPEN, "isolate_requeue_after": 0}
    cmd += ["-e", json.dumps(base), *extra]
    # the audit trail the playbook refuses to start without (issue 41), in the run's own state directory
    env = dict(testbed.env, ANSIBLE_CALLBACKS_ENABLED="gpuops.cluster.audit", GPUOPS_STATE_DIR=str(tmp_path / "state"))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(REPO), timeout=240, check=False)


def test_jinja_in_isolate_extra_vars_runs_nothing(testbed, tmp_path):
    node = testbed.nodes[0]
    before = testbed.node_state(node)
    marker = tmp_path / "marker"
    for field, value in (
        ("isolate_reason", "{{ lookup('pipe', 'touch %s; echo pwned') }}" % marker),
        ("isolate_reason", "{%% set x = lookup('pipe', 'touch %s') %%}drained" % marker),
        ("isolate_reason", "{# gone #}drained"),
        ("isolate_ticket", "{{ lookup('pipe', 'touch %s') }}" % marker),
    ):
        ev = {"isolate_nodes": [node], "isolate_ticket": "T-1", "isolate_reason": "test", field: value}
        proc = _isolate(testbed, tmp_path, "-e", json.dumps(ev))
        assert proc.returncode != 0, proc.stdout[-2000:]
        assert "extra vars %s hold template syntax" % field in proc.stdout, proc.stdout[-3000:]
        assert not marker.exists(), "a template from an extra var ran"
        assert testbed.node_state(node) == before  # nothing was isolated


def test_bad_ticket_is_refused_by_name(testbed, tmp_path):
    node = testbed.nodes[0]
    before = testbed.node_state(node)
    for ticket in ("T-1\n", "T 1", "../x"):
        ev = {"isolate_nodes": [node], "isolate_ticket": ticket, "isolate_reason": "test"}
        proc = _isolate(testbed, tmp_path, "-e", json.dumps(ev))
        assert proc.returncode != 0
        assert "isolate_ticket %s is not an id" % json.dumps(ticket).replace('"', "'") in proc.stdout.replace(
            "\\\\", "\\"
        ), proc.stdout[-3000:]
        assert testbed.node_state(node) == before


def test_unsafe_reason_lands_in_slurm_literally(testbed, tmp_path):
    node = testbed.nodes[1]
    marker = tmp_path / "marker"
    reason = "{{ lookup('pipe', 'touch %s') }} {# kept #} {%% if 1 %%}x{%% endif %%}" % marker
    ev = tmp_path / "ev.yml"
    ev.write_text(
        'isolate_nodes: [!unsafe %s]\nisolate_ticket: !unsafe "OPS-12"\nisolate_reason: !unsafe %s\n'
        % (json.dumps(node), json.dumps(reason))
    )
    try:
        proc = _isolate(testbed, tmp_path, "-e", "@%s" % ev)
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert not marker.exists()
        assert "DRAIN" in testbed.node_state(node)
        shown = testbed.scontrol("show", "node", node)
        assert "gpuops: %s [OPS-12]" % reason in shown, shown  # the module prefixes its part
        marker_file = tmp_path / "state" / "isolation" / ("%s.json" % node)
        doc = json.loads(marker_file.read_text())
        assert doc["why"] == reason and doc["ticket"] == "OPS-12"
    finally:
        testbed.scontrol("update", "nodename=%s" % node, "state=resume", check=False)


# --- issue 35 item 8: a key=value reason cut at a space is refused, naming the JSON form (no test bed) ----------
def _isolate_offline(tmp_path, *extra):
    """playbooks/isolate.yml in check mode over an inventory whose node is never contacted (TEST-NET-1): the
    input check is the first task on localhost, before the role reads Slurm."""
    from playbook_env import playbook_env

    inv = tmp_path / "hosts.yml"
    inv.write_text("all:\n  children:\n    gpu_nodes:\n      hosts:\n        gpu-node-01: {ansible_host: 192.0.2.1}\n")
    cmd = [str(VENV_BIN / "ansible-playbook"), "-i", str(inv), str(REPO / "playbooks" / "isolate.yml"), "--check"]
    base = {"isolate_nodes": ["gpu-node-01"], "isolate_ticket": "T-1", "gpuops_state_dir": str(tmp_path / "state")}
    cmd += ["-e", json.dumps(base), *extra]
    env = playbook_env(GPUOPS_STATE_DIR=str(tmp_path / "state"))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=240, check=False)


def test_a_reason_cut_at_a_space_is_refused_naming_the_json_form(tmp_path):
    """Observed (issue 35 item 8): `-e 'isolate_reason=Xid 79'` reached Slurm as `Xid`, silently (Ansible's
    key=value split keeps the first word and leaves `79` in _raw_params). Now the run stops at the input check,
    before the role, and says which JSON to pass instead."""
    for extra, want in (
        (["-e", "isolate_reason=Xid 79"], """-e '{"isolate_reason": "Xid 79"}'"""),
        (
            ["-e", "isolate_reason=Xid 79 on GPU 3 gpuops_change_id=CHG-1"],
            """-e '{"isolate_reason": "Xid 79 on GPU 3", "gpuops_change_id": "CHG-1"}'""",
        ),
    ):
        proc = _isolate_offline(tmp_path, *extra)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out[-3000:]
        assert "was cut at a space" in out and want in out.replace('\\"', '"'), out[-3000:]
        assert "TASK [Isolate the nodes]" not in out and "Traceback" not in out, out[-3000:]
        assert not (tmp_path / "state" / "isolation").exists()
