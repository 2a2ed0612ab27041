# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every alert of the generated Prometheus rules (extensions/prometheus/gpuops-rules.yml) reaches the runbook
the catalogue names for it, under the real ansible-rulebook running the unmodified rulebook
(extensions/eda/rulebooks/gpuops.yml), fed grouped Alertmanager payloads.

One rulebook process, one payload per catalogue entry holding every alert name of that entry (two firing
nodes each, one resolved alert): each payload is one playbook run (rules run one at a time), so the whole map
costs one run per runbook. The playbooks under the temp dir only RECORD what they were asked to do (nothing is
drained). Alerts of entries that need an approval (replace, PSU/fan) go to the read-only inspection, never to
their playbook. A static check proves the playbooks the rules run are the operator's (the catalogue's), that
they validate outside input first and that the disruptive ones reach the change guard (windows, audit).
Needs build/venv-eda (tests/testbed/eda-setup.sh, or GPUOPS_EDA_BIN) and Java 17; skipped without them,
failed under CI=true."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import time

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import prom_rules as _prom_rules
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import merge_policy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
_spec = importlib.util.spec_from_file_location("gpuops_eda_helpers", os.path.join(HERE, "test_eda.py"))
eda_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eda_helpers)

CATALOG = _runbooks.load(_runbooks.DEFAULT_CATALOG)
RULES = _prom_rules.build(merge_policy(None, {}), CATALOG)
NODE_ALERTS = [r["alert"] for g in RULES["groups"] for r in g["rules"] if r["labels"]["scope"] == "node"]
PLAYBOOKS = ("isolate.yml", "leak_response.yml", "gpu_reset.yml", "collect.yml", "inspect.yml", "replace.yml")
RECORDED_VARS = (
    "isolate_nodes",
    "isolate_ticket",
    "isolate_reason",
    "gpu_reset_ticket",
    "gpu_reset_drain_timeout",
    "leak_response_source",
    "leak_response_alert_id",
)

RECORDER = """---
- name: Record what the rule asked for instead of acting (EDA test)
  hosts: localhost
  gather_facts: false
  tasks:
    - name: One file per run
      ansible.builtin.copy:
        dest: "{{ lookup('env', 'GPUOPS_EDA_RECORD') }}/{{ gpuops_runbook }}.{{ 999999999 | random }}.json"
        content: >-
          {{ {'playbook': 'playbooks/%s', 'runbook': gpuops_runbook, 'ticket': gpuops_ticket,
              'nodes': gpuops_targets.split(',') | select | list, 'vars': __vars} | to_json }}
        mode: "0600"
      vars:
        __vars:
%s
"""


def handler(alert):
    """(catalogue entry id, playbook) an alert must run: its own entry, or the inspection when the entry needs an
    approval that EDA cannot give."""
    entry = _runbooks.by_alert(CATALOG, alert)
    if entry["approval_required"]:
        entry = _runbooks.by_id(CATALOG, "inspect")
    return entry["id"], entry["playbook"]


def expected_runs():
    """handler -> its alert names (one payload each)."""
    out = {}
    for alert in NODE_ALERTS:
        out.setdefault(handler(alert), []).append(alert)
    return out


def _node(alert, i):
    return "%s-%d" % (alert.lower(), i)


@pytest.fixture(scope="module")
def eda(tmp_path_factory):
    why = eda_helpers._missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    work = tmp_path_factory.mktemp("eda-runbooks")
    (work / "playbooks").mkdir()
    fields = "\n".join('          %s: "{{ %s | default(none) }}"' % (v, v) for v in RECORDED_VARS)
    for name in PLAYBOOKS:
        (work / "playbooks" / name).write_text(RECORDER % (name, fields))
    (work / "inv.ini").write_text(
        'localhost ansible_connection=local ansible_python_interpreter="{{ ansible_playbook_python }}"\n'
    )
    rec = work / "rec"
    rec.mkdir()
    port = eda_helpers._free_port()
    proc, log = eda_helpers.start_rulebook(work, rec, GPUOPS_EDA_PORT=str(port), GPUOPS_EDA_TOKEN=eda_helpers.TOKEN)
    eda_helpers.wait_listening(proc, port, log)
    yield {"url": "http://127.0.0.1:%d/endpoint" % port, "rec": rec, "log": log}
    eda_helpers.stop(proc)


def test_every_alert_runs_its_runbook(eda):
    runs = expected_runs()
    # every runbook the issue names has its path: isolate, GPU reset, IB port, PSU/fan (-> inspection: approval),
    # leak, node unreachable, storage and scheduler (-> inspection: no runbook automates them)
    assert {h[0] for h in runs} >= {
        "gpu_fell_off_bus",
        "gpu_uncorrectable_ecc",
        "ib_port",
        "coolant_leak",
        "node_unreachable",
        "inspect",
    }
    for key, alerts in sorted(runs.items()):
        entry = key[0]
        body = [eda_helpers.alert(a, _node(a, i), gpu="3", rack="r1") for a in alerts for i in (1, 2)]
        body.append(eda_helpers.alert(alerts[0], _node(alerts[0], 9), status="resolved"))
        if entry == "coolant_leak":  # leak_response takes one source node: Alertmanager groups by node there
            body = [eda_helpers.alert(alerts[0], _node(alerts[0], 1))]
        assert eda_helpers.post(eda["url"], eda_helpers.am_payload("group-" + entry, *body)) == 200
    deadline = time.monotonic() + 40 * len(runs)
    while len(list(eda["rec"].iterdir())) < len(runs) and time.monotonic() < deadline:
        time.sleep(0.3)
    time.sleep(1.0)  # anything extra would have arrived by now
    got = {}
    for f in eda["rec"].iterdir():
        rec = json.loads(f.read_text())
        assert rec["runbook"] not in got, "two runs for %s" % rec["runbook"]
        got[rec["runbook"]] = rec
    assert sorted(got) == sorted(e for e, unused in runs), eda["log"].read_text()[-3000:]
    for (entry, playbook), alerts in runs.items():
        rec = got[entry]
        assert rec["playbook"] == playbook, entry
        assert rec["playbook"] != "playbooks/replace.yml"  # never without an approval
        want = sorted(_node(a, i) for a in alerts for i in (1, 2))
        if entry == "coolant_leak":
            want = [_node(alerts[0], 1)]
            assert rec["vars"]["leak_response_source"] == want[0]
            assert rec["vars"]["leak_response_alert_id"] == rec["ticket"]
        assert rec["nodes"] == want, entry  # the firing nodes only, never the resolved one
        assert rec["ticket"] == "alert-" + hashlib.sha256(("group-" + entry).encode()).hexdigest()[:16]
        ticket_vars = _runbooks.by_id(CATALOG, entry)["ticket_vars"]
        for var, src in ticket_vars.items():
            if src == "nodes":
                assert rec["vars"][var] == want, (entry, var)
            elif src == "ticket":
                assert rec["vars"][var] == rec["ticket"], (entry, var)
        for var, value in _runbooks.by_id(CATALOG, entry)["extra_vars"].items():
            if var in RECORDED_VARS:
                assert str(rec["vars"][var]) == str(value), (entry, var)


# ------------------------------------------------------------------------------------------ static: same path
def _roles(path, seen):
    """Roles a playbook or task file includes/imports (gpuops.cluster.<role>), followed into their tasks."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    for role in re.findall(r"name:\s*gpuops\.cluster\.([a-z_]+)", text):
        tasks = os.path.join(ROOT, "roles", role, "tasks")
        if role in seen or not os.path.isdir(tasks):
            continue
        seen.add(role)
        for name in os.listdir(tasks):
            _roles(os.path.join(tasks, name), seen)
    for name in re.findall(r"import_tasks:\s*([a-z_]+\.yml)", text):
        sub = os.path.join(os.path.dirname(path), name)
        if os.path.isfile(sub) and sub not in seen:
            seen.add(sub)
            _roles(sub, seen)
    return seen


def test_rules_run_the_operators_playbooks_through_guard_and_input_checks():
    with open(eda_helpers.RULEBOOK, encoding="utf-8") as fh:
        rules = yaml.safe_load(fh)[0]["rules"]
    assert len(rules) == len(expected_runs())
    for rule in rules:
        run = rule["action"]["run_playbook"]
        entry = _runbooks.by_id(CATALOG, run["extra_vars"]["gpuops_runbook"])
        assert run["name"] == entry["playbook"], rule["name"]
        assert not entry["approval_required"], "%s: EDA cannot approve %s" % (rule["name"], entry["id"])
        path = os.path.join(ROOT, entry["playbook"])
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        # outside input is data: the playbook validates every variable the rule passes before templating it
        assert "gpuops.cluster.untrusted_input" in text, entry["playbook"]
        if entry["disruptive"]:
            assert "change_guard" in _roles(path, set()), "%s does not reach the change guard" % entry["playbook"]
        # reason texts are constants; everything taken from the payload is sanitised in the rule
        for var, value in run["extra_vars"].items():
            if "event." in str(value):
                assert "regex_replace" in str(value), (rule["name"], var)
