# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every alert of the generated Prometheus rules (extensions/prometheus/gpuops-rules.yml) reaches the runbook
the catalogue names for it, under the real ansible-rulebook running the unmodified rulebook
(extensions/eda/rulebooks/gpuops.yml), fed grouped Alertmanager payloads, and the REAL playbooks run against the test
bed's Slurm (test_eda.start_bed_rulebook: the rulebook from the repository root, the bed's inventory).

One rulebook process, one payload per catalogue entry holding every alert name of that entry (two firing bed nodes,
one resolved): each payload is one playbook run (rules run one at a time). What each run did is read from what the
playbook itself leaves: its run outcome (isolate, gpu_reset, leak_response: the nodes and the ticket), its capture
directory (collect) or its report (inspect). Alerts of entries that need an approval (replace, PSU/fan) go to the
read-only inspection, never to their playbook. A static check proves the playbooks the rules run are the operator's
(the catalogue's), that they validate outside input first and that the disruptive ones reach the change guard
(windows, audit). Needs build/venv-eda (tests/testbed/eda-setup.sh, or GPUOPS_EDA_BIN), Java 17 and the bed;
skipped without them, failed under CI=true."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import prom_rules as _prom_rules
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import merge_policy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
_spec = importlib.util.spec_from_file_location(
    "gpuops_eda_helpers", os.path.join(HERE, "test_eda_bed.py")
)  # the bed helpers
eda_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(eda_helpers)

CATALOG = _runbooks.load(_runbooks.DEFAULT_CATALOG)
RULES = _prom_rules.build(merge_policy(None, {}), CATALOG)
NODE_ALERTS = [r["alert"] for g in RULES["groups"] for r in g["rules"] if r["labels"]["scope"] == "node"]
PLAYBOOKS = ("isolate.yml", "leak_response.yml", "gpu_reset.yml", "collect.yml", "inspect.yml", "replace.yml")
FIRING = ("gpu-node-01", "gpu-node-02")
RESOLVED = "gpu-node-03"
#: what each playbook leaves behind: its run outcome (workflow), or a capture / a report
OUTCOME_WORKFLOW = {"playbooks/isolate.yml": "isolate", "playbooks/gpu_reset.yml": "gpu_reset"}
OUTCOME_WORKFLOW["playbooks/leak_response.yml"] = "leak_response"


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


@pytest.fixture(scope="module")
def eda(testbed, tmp_path_factory):
    work = tmp_path_factory.mktemp("eda-runbooks")
    overlay = {
        "all": {
            "vars": {
                "gpuops_isolation_guard": eda_helpers.OPEN_GUARD,
                "gpuops_capture_root": str(work / "captures"),
                "gpuops_report_dir": str(work / "reports"),
            }
        }
    }
    bed = eda_helpers.start_bed_rulebook(testbed, work, overlay)
    try:
        yield dict(bed, work=work)
    finally:
        eda_helpers.stop_bed_rulebook(bed)


def _ticket(entry):
    return "alert-" + hashlib.sha256(("group-" + entry).encode()).hexdigest()[:16]


def _did(eda, entry, playbook):
    """The nodes the real playbook acted on for ``entry``'s payload (None while it has not finished)."""
    if playbook in OUTCOME_WORKFLOW:
        runs = [o for o in eda_helpers.outcomes(eda, OUTCOME_WORKFLOW[playbook]) if o.get("ticket") == _ticket(entry)]
        assert len(runs) <= 1, runs
        return sorted(runs[0]["nodes"]) if runs else None
    if playbook == "playbooks/collect.yml":
        root = eda["work"] / "captures"
        hosts = sorted(p.name for p in root.iterdir() if any(p.iterdir())) if root.is_dir() else []
        return hosts or None
    if playbook == "playbooks/inspect.yml":
        reports = sorted((eda["work"] / "reports").rglob("report.json"))
        return sorted(json.loads(reports[-1].read_text())["nodes"]) if reports else None
    raise AssertionError("no way to see what %s did" % playbook)


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
        body = [eda_helpers.alert(a, n, gpu="3", rack="r1") for a in alerts for n in FIRING]
        body.append(eda_helpers.alert(alerts[0], RESOLVED, status="resolved"))
        if entry == "coolant_leak":  # leak_response takes one source node: Alertmanager groups by node there
            body = [eda_helpers.alert(alerts[0], FIRING[0])]
        assert eda_helpers.post(eda["url"], eda_helpers.am_payload("group-" + entry, *body)) == 200
    for (entry, playbook), _alerts in sorted(runs.items()):
        assert playbook != "playbooks/replace.yml"  # never without an approval
        want = [FIRING[0]] if entry == "coolant_leak" else sorted(FIRING)  # the firing nodes, never the resolved
        got = eda_helpers.wait_until(
            "%s's run (%s)" % (entry, playbook), lambda e=entry, p=playbook: _did(eda, e, p), eda, 600
        )
        assert got == want, (entry, playbook, got)


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
