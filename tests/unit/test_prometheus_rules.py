# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The generated Prometheus rules (extensions/prometheus/gpuops-rules.yml, plugins/plugin_utils/inspect/prom_rules.py):
committed file up to date, thresholds from the policy, runbooks from the catalogue, and the real promtool
(`check rules`, `test rules` on extensions/prometheus/tests/*.yml with a firing and a not-firing case for every
alert). promtool comes with Debian's prometheus package (tests/testbed/deps.sh); without it the promtool tests
skip, and fail under CI=true."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _runbooks
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import prom_rules as _prom_rules
from ansible_collections.gpuops.cluster.plugins.plugin_utils._policy import DEFAULT_POLICY, merge_policy

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROM = os.path.join(ROOT, "extensions", "prometheus")
RULES = os.path.join(PROM, "gpuops-rules.yml")
TESTS = sorted(glob.glob(os.path.join(PROM, "tests", "*.yml")))
CATALOG = _runbooks.load(_runbooks.DEFAULT_CATALOG)


def promtool():
    exe = shutil.which("promtool")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool not installed (tests/testbed/deps.sh: prometheus)")
        pytest.skip("promtool not installed")
    return exe


def generated(overrides=None):
    return _prom_rules.build(merge_policy(None, overrides or {}), CATALOG)


def rules_by_name(doc):
    return {r["alert"]: r for g in doc["groups"] for r in g["rules"]}


def committed():
    with open(RULES, encoding="utf-8") as fh:
        return fh.read()


def test_committed_rule_file_is_up_to_date():
    want = _prom_rules.render(merge_policy(None, {}), CATALOG)
    assert committed() == want, "stale: PYTHONPATH=build python -m %s (docs/alerting.md)" % _prom_rules.__name__


def test_cli_check_says_stale_and_writes(tmp_path, capsys):
    out = tmp_path / "rules.yml"
    out.write_text("groups: []\n")
    assert _prom_rules.main(["--out", str(out), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert _prom_rules.main(["--out", str(out)]) == 0
    assert out.read_text() == committed()
    assert _prom_rules.main(["--out", str(out), "--check"]) == 0


def test_cli_bad_overrides_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "over.yml"
    bad.write_text("gpuops_policy_overrides:\n  thresholds:\n    temprature: {}\n")
    assert _prom_rules.main(["--out", "-", "--overrides", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "temprature" in err and "Traceback" not in err
    assert _prom_rules.main(["--out", "-", "--overrides", str(tmp_path / "missing.yml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_policy_override_changes_the_generated_thresholds():
    default = rules_by_name(generated())
    over = rules_by_name(
        generated(
            {
                "thresholds": {
                    "temperature": {"gpu_fallback_p2_c": 80, "memory_p1_c": 101},
                    "ecc": {"volatile_corrected": 500},
                    "remap": {"rma_uncorrectable_rows": 256},
                    "nvlink": {"crc_per_second": 7, "min_interval_s": 120},
                    "ib": {"link_flap": {"p1_downs": 9}, "counters": {"symbol_error": {"per_hour": 50}}},
                }
            }
        )
    )
    assert "DCGM_FI_DEV_GPU_TEMP >= 85 " in default["GpuTemperatureHigh"]["expr"]
    assert "DCGM_FI_DEV_GPU_TEMP >= 80 " in over["GpuTemperatureHigh"]["expr"]
    assert "DCGM_FI_DEV_MEMORY_TEMP >= 101" in over["GpuTemperatureCritical"]["expr"]
    assert over["GpuCorrectableEccHigh"]["expr"] == "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL >= 500"
    assert "UNCORRECTABLE_REMAPPED_ROWS >= 256" in over["GpuRowRemapFailure"]["expr"]
    assert "[120s]) >= 7" in over["GpuNvlinkDown"]["expr"]
    assert over["IbLinkFlapping"]["expr"].endswith(">= 9")
    assert "symbol_error_total[1h]) > 50," in over["IbPortErrors"]["expr"]
    assert "symbol_error_total[1h]) > 120," in default["IbPortErrors"]["expr"]


def test_xid_severity_and_throttle_reasons_come_from_the_policy():
    default = rules_by_name(generated())
    assert default["GpuXid79"]["labels"]["severity"] == "P1"
    over = rules_by_name(
        generated(
            {
                "xid": {"overrides": {"48": {"severity": "P2", "action": "monitor"}}},
                "thresholds": {"throttle": {"reasons": {"hw_slowdown": {"severity": "P1", "action": "monitor"}}}},
            }
        )
    )
    assert over["GpuXid48"]["labels"]["severity"] == "P2"
    assert over["GpuPowerBrake"]["labels"]["severity"] == "P1"  # the worst of its fault reasons
    # a site whose policy lists no power reason as a fault gets no power-brake alert; 8 = hw_slowdown's bit
    reasons = dict(DEFAULT_POLICY["thresholds"]["throttle"]["reasons"])
    for name in ("hw_slowdown", "hw_power_brake_slowdown"):
        reasons.pop(name)
    policy = merge_policy(None, {})
    policy["thresholds"]["throttle"]["reasons"] = reasons
    names = rules_by_name(_prom_rules.build(policy, CATALOG))
    assert "GpuPowerBrake" not in names and "GpuThermalThrottle" in names
    assert "/ 8)" in default["GpuPowerBrake"]["expr"] and "/ 128)" in default["GpuPowerBrake"]["expr"]


def test_every_alert_has_severity_runbook_and_a_known_link():
    doc = generated()
    for name, rule in rules_by_name(doc).items():
        labels, ann = rule["labels"], rule["annotations"]
        # finding-based alerts keep the finding's own severity label (the expression selects P0-P2)
        assert labels.get("severity") in ("P0", "P1", "P2", "P3") or 'severity=~"P0|P1' in rule["expr"], name
        assert labels["scope"] in ("node", "cluster") and labels["domain"], name
        entry = _runbooks.by_alert(CATALOG, name)
        assert labels["runbook"] == (entry["id"] if entry else "none"), name
        if labels["scope"] == "node":
            assert entry is not None, "%s: a node alert the catalogue does not map" % name
        path, anchor = ann["runbook_url"][len(_prom_rules.RUNBOOK_BASE) :].split("#")
        assert os.path.isfile(os.path.join(ROOT, path)), name
        assert anchor in _runbooks.anchors(os.path.join(ROOT, path)).values(), name


def test_an_alert_the_catalogue_does_not_map_is_refused():
    catalog = {"entries": [e for e in CATALOG["entries"] if "GpuXid79" not in e["alerts"]], "unmapped": {}}
    with pytest.raises(_prom_rules.RuleError, match="GpuXid79"):
        _prom_rules.build(merge_policy(None, {}), catalog)


def test_sampling_intervals_match_the_contract():
    doc = generated()
    groups = {g["name"]: g for g in doc["groups"]}
    assert groups["gpuops-gpu-fast"]["interval"] == "1s"  # temperature, power, throttling at 1 s
    assert groups["gpuops-gpu-events"]["interval"] == "5s"  # ECC and Xid at 5 s
    assert all(r.get("for") == "3s" for r in groups["gpuops-gpu-fast"]["rules"])
    assert all("for" not in r for r in groups["gpuops-gpu-events"]["rules"])  # an event fires on first sight


def test_promtool_check_rules():
    proc = subprocess.run(
        [promtool(), "check", "rules", RULES], check=False, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: %d rules found" % len(rules_by_name(generated())) in proc.stdout


def test_every_alert_has_a_firing_and_a_not_firing_case():
    firing, quiet = set(), set()
    for path in TESTS:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
        assert doc["rule_files"] == ["../gpuops-rules.yml"], path
        for test in doc["tests"]:
            for case in test.get("alert_rule_test", []):
                (firing if case["exp_alerts"] else quiet).add(case["alertname"])
    names = set(rules_by_name(generated()))
    assert names - firing == set(), "alerts without a firing case"
    assert names - quiet == set(), "alerts without a not-firing case"


def test_promtool_test_rules():
    proc = subprocess.run(
        [promtool(), "test", "rules"] + [os.path.basename(t) for t in TESTS],
        cwd=os.path.join(PROM, "tests"),
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("SUCCESS") == len(TESTS)


def test_promtool_fails_the_tests_against_an_overridden_policy(tmp_path):
    """The unit tests really check the thresholds: rules generated with a GPU P2 threshold of 90 C no longer
    fire for the 86 C case of tests/gpu-fast.yml."""
    (tmp_path / "tests").mkdir()
    policy = merge_policy(None, {"thresholds": {"temperature": {"gpu_fallback_p2_c": 90}}})
    (tmp_path / "gpuops-rules.yml").write_text(_prom_rules.render(policy, CATALOG))
    shutil.copy(os.path.join(PROM, "tests", "gpu-fast.yml"), tmp_path / "tests")
    proc = subprocess.run(
        [promtool(), "test", "rules", "gpu-fast.yml"],
        cwd=str(tmp_path / "tests"),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0
    assert "alertname: GpuTemperatureHigh" in proc.stdout + proc.stderr


def test_docs_list_every_alert_with_its_runbook_and_test():
    with open(os.path.join(ROOT, "docs", "alerting.md"), encoding="utf-8") as fh:
        rows = {line.split("|")[1].strip(" `"): line for line in fh if line.startswith("| `")}
    group_file = {
        "gpuops-gpu-fast": "gpu-fast.yml",
        "gpuops-gpu-events": "gpu-events.yml",
        "gpuops-infiniband": "infiniband.yml",
        "gpuops-collection": "collection.yml",
    }
    doc = generated()
    for group in doc["groups"]:
        for rule in group["rules"]:
            row = rows.get(rule["alert"])
            assert row is not None, "docs/alerting.md does not list %s" % rule["alert"]
            assert "[%s]" % rule["labels"]["runbook"] in row, rule["alert"]
            assert "extensions/prometheus/tests/%s" % group_file[group["name"]] in row, rule["alert"]
    assert set(rows) == set(rules_by_name(doc)), "docs/alerting.md lists an alert the rules do not define"


def _alerting_doc_links():
    """Every Markdown link of docs/alerting.md to a .md file: (link text, path from the root, anchor)."""
    import re

    with open(os.path.join(ROOT, "docs", "alerting.md"), encoding="utf-8") as fh:
        text = fh.read()
    out = []
    for m in re.finditer(r"\[([^\]]*)\]\(([^)#\s]+\.md)(?:#([^)\s]*))?\)", text):
        out.append((m.group(0), os.path.normpath(os.path.join("docs", m.group(2))), m.group(3)))
    return out


def test_every_alert_link_opens_a_heading_of_its_runbook():
    """The anchor of every runbook_url (generated and committed rule file) and of every runbook link in
    docs/alerting.md is a heading of the target file, as markdown-it-py reads it (runbook_oracle: an oracle outside
    _runbooks' own heading scanner)."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins", "plugin_utils"))
    from runbook_oracle import github_anchors  # pylint: disable=import-outside-toplevel

    with open(os.path.join(ROOT, "extensions", "prometheus", "gpuops-rules.yml"), encoding="utf-8") as fh:
        committed_doc = yaml.safe_load(fh)
    urls = [r["annotations"]["runbook_url"] for doc in (generated(), committed_doc) for g in doc["groups"]
            for r in g["rules"]]  # fmt: skip
    assert urls
    for url in urls:
        assert url.startswith(_prom_rules.RUNBOOK_BASE), url
        path, _sep, anchor = url[len(_prom_rules.RUNBOOK_BASE) :].partition("#")
        assert os.path.isfile(os.path.join(ROOT, path)), url
        assert anchor and anchor in github_anchors(os.path.join(ROOT, path)), "%s: no such heading" % url
    with open(os.path.join(ROOT, "docs", "alerting.md"), encoding="utf-8") as fh:
        rows = {line.split("|")[1].strip(" `"): line for line in fh if line.startswith("| `")}
    for name, rule in rules_by_name(committed_doc).items():  # the doc's row links where the alert links
        page = rule["annotations"]["runbook_url"][len(_prom_rules.RUNBOOK_BASE) :]
        assert "(../%s)" % page in rows.get(name, ""), "docs/alerting.md row of %s does not link %s" % (name, page)
    for whole, path, anchor in _alerting_doc_links():
        assert os.path.isfile(os.path.join(ROOT, path)), whole
        if anchor:
            assert anchor in github_anchors(os.path.join(ROOT, path)), "docs/alerting.md %s: no such heading" % whole


def test_the_link_check_catches_a_heading_that_is_gone(tmp_path):
    """The oracle itself: a runbook whose "## Run" was renamed no longer has the #run anchor."""
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "plugins", "plugin_utils"))
    from runbook_oracle import github_anchors  # pylint: disable=import-outside-toplevel

    with open(os.path.join(ROOT, "runbooks", "gpu-throttling.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert "run" in github_anchors(os.path.join(ROOT, "runbooks", "gpu-throttling.md"))
    (tmp_path / "r.md").write_text(text.replace("\n## Run\n", "\n## Commands\n"))
    assert "run" not in github_anchors(str(tmp_path / "r.md"))
