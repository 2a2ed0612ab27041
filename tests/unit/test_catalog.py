# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""runbooks/catalog.yml against the tree: every entry's runbook and playbook exist, the playbooks pass
`ansible-playbook --syntax-check`, every finding check of docs/checks.md is mapped or explicitly unmapped,
and the EDA rulebook's alert names agree with the catalogue."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from gpuops_runbook import catalog  # noqa: E402

CATALOG = os.path.join(ROOT, "runbooks", "catalog.yml")
DATA = catalog.load(CATALOG)
ENTRIES = catalog.entries(DATA)
PLAYBOOKS = sorted({e["playbook"] for e in ENTRIES})
RUNBOOK_SECTIONS = (
    "## When",
    "## Triggers",
    "## Preconditions",
    "## Run",
    "## What it does",
    "## Roll back",
    "## Evidence",
)


def documented_checks():
    text = open(os.path.join(ROOT, "docs", "checks.md"), encoding="utf-8").read()
    checks = set()
    for line in text.splitlines():
        if line.startswith("### "):
            checks.update(re.findall(r"`([a-z]+\.[a-z_]+)`", line))
        elif line.startswith("| `cluster."):
            checks.update(re.findall(r"`(cluster\.[a-z_]+)`", line.split("|")[1]))
    return checks


def test_catalogue_shape():
    assert catalog.validate(DATA) == []
    assert len(ENTRIES) >= 12


def test_validate_catches_bad_entries():
    bad = {
        "entries": [{"id": "Bad Id", "change_class": "whenever", "codes": ["79"], "extra_vars": {"gpuops_targets": 1}}]
    }
    problems = " | ".join(catalog.validate(bad))
    for needle in (
        "id must match",
        "change_class must be one of",
        "codes are '<check>:<code>'",
        "may not set",
        "`playbook` must be",
    ):
        assert needle in problems
    assert catalog.validate([]) == ["top level must be a mapping with an `entries` list"]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_runbook_document_exists_with_sections(entry):
    path = os.path.join(ROOT, "runbooks", entry["runbook"])
    assert os.path.isfile(path), "runbooks/%s is missing" % entry["runbook"]
    if entry["runbook"] == "README.md":
        return
    text = open(path, encoding="utf-8").read()
    missing = [s for s in RUNBOOK_SECTIONS if s not in text]
    assert not missing, "runbooks/%s lacks %s" % (entry["runbook"], missing)
    # commands in the installed form (issue 14): playbooks/isolate.yml is run as gpuops.cluster.isolate
    installed = "gpuops.cluster." + os.path.basename(entry["playbook"])[: -len(".yml")]
    assert "ansible-playbook -i inventories/prod %s" % installed in text, (
        "runbooks/%s never shows the command for %s" % (entry["runbook"], installed)
    )


def test_readme_indexes_every_runbook():
    readme = open(os.path.join(ROOT, "runbooks", "README.md"), encoding="utf-8").read()
    files = sorted(f for f in os.listdir(os.path.join(ROOT, "runbooks")) if f.endswith(".md") and f != "README.md")
    assert len(files) >= 12
    assert [f for f in files if "(%s#preconditions)" % f not in readme] == []  # links open Preconditions (issue 41)


@pytest.mark.parametrize("playbook", PLAYBOOKS)
def test_playbook_exists(playbook):
    users = [e["id"] for e in ENTRIES if e["playbook"] == playbook]
    assert os.path.isfile(os.path.join(ROOT, playbook)), (
        "catalogue entries %s point at %s, which does not exist (yet): the runbook cannot be run" % (users, playbook)
    )


def test_existing_playbooks_pass_syntax_check():
    existing = [p for p in PLAYBOOKS if os.path.isfile(os.path.join(ROOT, p))]
    assert "playbooks/inspect.yml" in existing
    bindir = os.path.dirname(sys.executable)
    env = dict(
        os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build"), PATH=bindir + os.pathsep + os.environ["PATH"]
    )
    env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
    proc = subprocess.run(
        [os.path.join(bindir, "ansible-playbook"), "-i", "localhost,", "--syntax-check", *existing],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_every_documented_check_is_mapped_or_explained():
    documented = documented_checks()
    assert {"gpu.xid", "bmc.leak", "node.unreachable", "cluster.capacity", "node.drift"} <= documented
    mapped = catalog.mapped_checks(DATA)
    unmapped = DATA.get("unmapped") or {}
    missing = sorted(c for c in documented if c not in mapped and c not in unmapped)
    assert missing == [], "checks with neither a runbook nor an `unmapped` reason: %s" % missing
    assert sorted(c for c in set(mapped) | set(unmapped) if c not in documented) == [], (
        "unknown checks in the catalogue"
    )
    # an unmapped reason for a mapped check is only allowed when part of its codes stays unmapped (a reason says which)
    for check in set(unmapped) & set(mapped):
        assert "Only" in unmapped[check] or "exception" in unmapped[check], check


def test_lookup_order_code_before_check():
    assert catalog.by_finding(DATA, "gpu.xid", "79")["id"] == "gpu_fell_off_bus"
    assert catalog.by_finding(DATA, "gpu.xid", 48)["id"] == "gpu_uncorrectable_ecc"
    assert catalog.by_finding(DATA, "gpu.row_remap", "failure")["playbook"] == "playbooks/replace.yml"
    assert catalog.by_finding(DATA, "gpu.row_remap", "pending")["playbook"] == "playbooks/gpu_reset.yml"
    assert catalog.by_finding(DATA, "gpu.missing", "unreadable")["id"] == "gpu_fell_off_bus"
    assert catalog.by_finding(DATA, "bmc.leak", "Critical")["playbook"] == "playbooks/leak_response.yml"
    assert catalog.by_finding(DATA, "gpu.xid", "13") is None  # user-caused Xids: no runbook
    assert catalog.by_finding(DATA, "node.mounts", "hung") is None


def test_alert_names_unique_and_rulebook_agrees():
    seen = {}
    for e in ENTRIES:
        for a in e["alerts"]:
            assert a not in seen, "alert %s in %s and %s" % (a, seen[a], e["id"])
            seen[a] = e
    rulebook = yaml.safe_load(
        open(os.path.join(ROOT, "extensions", "eda", "rulebooks", "gpuops.yml"), encoding="utf-8")
    )
    rules = rulebook[0]["rules"]
    assert len(rules) >= 2
    for rule in rules:
        names = re.findall(r'"([A-Za-z0-9]+)"', re.search(r"\[(.*?)\]", rule["condition"]).group(1))
        run = rule["action"]["run_playbook"]
        entry = catalog.by_id(DATA, run["extra_vars"]["gpuops_runbook"])
        assert entry is not None and run["name"] == entry["playbook"]
        want = set(entry["alerts"])
        if entry["id"] == "inspect":  # the inspection path also takes the alerts EDA cannot approve (issue 16)
            want |= {a for e in ENTRIES if e["approval_required"] for a in e["alerts"]}
        assert names and set(names) == want, rule["name"]
        assert set(re.findall(r"'([A-Za-z0-9]+)'", run["extra_vars"]["gpuops_targets"])) >= want
        # the playbook's own variables get the nodes and the ticket too
        for var, src in entry["ticket_vars"].items():
            if src == "node":  # single-node playbooks get the first firing node (Alertmanager groups per node)
                assert "| first" in run["extra_vars"].get(var, ""), (rule["name"], var)
                continue
            if src == "nodes":  # the same selection as gpuops_targets, as a native list
                sel = run["extra_vars"]["gpuops_targets"].split("| join")[0]
                assert run["extra_vars"].get(var, "").split("| list")[0] == sel, (rule["name"], var)
                continue
            assert run["extra_vars"].get(var) == run["extra_vars"]["gpuops_ticket"], (rule["name"], var)
        for var in entry["extra_vars"]:
            assert var in run["extra_vars"], (rule["name"], var)


def test_disruptive_and_approval_flags_are_sane():
    for e in ENTRIES:
        if e["change_class"] == "read_only":
            assert not e["disruptive"] and not e["approval_required"], e["id"]
        if e["change_class"] == "planned":
            assert e["approval_required"], "%s: planned work needs an approval" % e["id"]
    assert catalog.by_id(DATA, "coolant_leak")["approval_required"] is False  # a leak cannot wait for a CAB
