# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inspection end to end on a generated simulated cluster (capture directories, no test bed needed).

playbooks/inspect.yml through ansible-playbook and ansible-runner; the answer key; the HTML report in headless
Chromium; gpuops.prom through promtool and against report.json; unreachable hosts; a policy typo; shared state.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from playbook_env import playbook_env

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
GENERATE = REPO / "tools" / "simcluster" / "generate.py"


def generate(out: Path, nodes: int, faults: str = "default", seed: int = 7) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(GENERATE),
            "--nodes",
            str(nodes),
            "--out",
            str(out),
            "--seed",
            str(seed),
            "--faults",
            faults,
        ],
        check=True,
        capture_output=True,
        text=True,
        env=playbook_env(),
    )
    return out


def inspect(inventory: Path, report_dir: Path, *extra: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [
            str(VENV_BIN / "ansible-playbook"),
            "-i",
            str(inventory),
            str(REPO / "playbooks" / "inspect.yml"),
            "-e",
            "gpuops_report_dir=%s" % report_dir,
            *extra,
        ],
        capture_output=True,
        text=True,
        env=playbook_env(),
        cwd=str(REPO),
        timeout=600,
        check=False,
    )
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def compare_with_key(report: dict, key: dict):
    """(missing, unkeyed): keyed (check, component) not found; P0-P2 node findings not in the key (the
    simulator's own scorer, tools/simcluster/score.py, which `make demo` prints)."""
    sys.path.insert(0, str(REPO / "tools"))
    from simcluster import score

    result = score.score(report, key)
    return result["missing"], result["false_alarms"]


@pytest.fixture(scope="module")
def sim64(tmp_path_factory):
    root = tmp_path_factory.mktemp("sim64")
    generate(root / "sim", 64)
    proc = inspect(root / "sim" / "inventory", root / "report")
    report = json.loads((root / "report" / "report.json").read_text())
    # the nodes' facts are in facts.json.gz beside report.json (issue 41): gzip of {"nodes": {host: facts}}
    side = json.loads(gzip.decompress((root / "report" / report["facts_file"]["path"]).read_bytes()))["nodes"]
    for host, node in report["nodes"].items():
        node["facts"] = side[host]
    key = json.loads((root / "sim" / "answer_key.json").read_text())
    return {"root": root, "report": report, "key": key, "stdout": proc.stdout}


def test_answer_key_default_faults(sim64):
    report, key = sim64["report"], sim64["key"]
    assert report["schema"] == "gpuops.report/v1"
    assert report["summary"]["nodes"] == 64
    missing, unkeyed = compare_with_key(report, key)
    assert missing == [], "keyed faults not found: %s" % missing
    assert unkeyed == [], "findings nobody injected: %s" % unkeyed
    keyed_hosts = {h for h, v in key["hosts"].items() if v}
    for host, node in report["nodes"].items():
        if host not in keyed_hosts:
            assert all(f["severity"] == "P3" for f in node["findings"]), (host, node["findings"])
            assert node["status"] == "healthy", (host, node["status"])
    # at least a few faults, of several kinds, really were injected
    assert len(keyed_hosts) >= 5
    assert len({e["check"] for v in key["hosts"].values() for e in v}) >= 5
    # benign conditions (idle PCIe downshift, SW power cap at load, user Xid) raise nothing above P3
    for host in key.get("benign", {}):
        if not key["hosts"].get(host):
            assert report["nodes"][host]["status"] == "healthy"


def test_report_fields_and_capture_hosts_never_contacted(sim64):
    report = sim64["report"]
    node = next(iter(report["nodes"].values()))
    assert set(node) >= {"status", "severity", "findings", "facts"}
    assert node["facts"]["mode"] == "capture"
    for n in report["nodes"].values():
        for f in n["findings"]:
            assert set(f) >= set("check severity component code message action rule respond_by evidence".split())
            assert f["respond_by"]
    # hosts have an unroutable ansible_host: the play never connected to them (no UNREACHABLE, no ssh)
    assert "UNREACHABLE" not in sim64["stdout"]
    assert report["policy"]["hash"] and report["policy"]["version"]
    assert all(n["policy_hash"] == report["policy"]["hash"] for n in report["nodes"].values())


@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium not installed (make deps)")
def test_html_report_renders_one_cell_per_node(sim64, tmp_path):
    html = sim64["root"] / "report" / "report.html"
    proc = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--user-data-dir=%s" % tmp_path,
            "--dump-dom",
            "file://%s" % html,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    # every node has its cell, healthy racks collapsed but present (issue 41); " stale" marks old evidence
    cells = re.findall(r'<a class="cell node-cell status-(\w+)(?: stale)?" data-node="([^"]+)"', dom)
    assert len(cells) == 64
    assert {cell[1] for cell in cells} == set(sim64["report"]["nodes"])
    for status, node in cells:
        assert status == sim64["report"]["nodes"][node]["status"]
    assert 'id="rack-grid"' in dom and "Findings per node" in dom


def _prom_samples(text: str):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_labels, value = line.rsplit(" ", 1)
        out[name_labels] = float(value)
    return out


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed (make deps)")
def test_prometheus_textfile_valid_and_equal_to_json(sim64):
    prom = (sim64["root"] / "report" / "gpuops.prom").read_text()
    proc = subprocess.run(
        ["promtool", "check", "metrics"], input=prom, capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    samples = _prom_samples(prom)
    summary = sim64["report"]["summary"]
    for status, count in summary["status"].items():
        assert samples['gpuops_nodes{status="%s"}' % status] == count
    for sev, count in summary["severity"].items():
        assert samples['gpuops_findings{severity="%s"}' % sev] == count
    for host, node in sim64["report"]["nodes"].items():
        assert samples['gpuops_node_status{node="%s",status="%s"}' % (host, node["status"])] == 1
        for sev in ("P0", "P1", "P2", "P3"):
            n = sum(1 for f in node["findings"] if f["severity"] == sev)
            assert samples['gpuops_node_findings{node="%s",severity="%s"}' % (host, sev)] == n


def test_markdown_is_ticket_ready(sim64):
    md = (sim64["root"] / "report" / "report.md").read_text()
    faulty = [h for h, n in sim64["report"]["nodes"].items() if n["status"] == "faulty"]
    assert faulty
    for host in faulty:
        assert "### %s: faulty" % host in md


def test_site_report_templates_replace_the_defaults(tmp_path):
    """gpuops_report_templates names a directory whose report.md.j2 / report.html.j2 win; HTML stays escaped."""
    generate(tmp_path / "sim", 16)
    site = tmp_path / "site"
    site.mkdir()
    (site / "report.md.j2").write_text(
        "SITE {{ summary.nodes }} nodes{% for a in attention %}; {{ a.host }} {{ a.node.status }}{% endfor %}\n"
    )
    (site / "report.html.j2").write_text("<h1>{{ report.generated_at }}</h1><p>{{ '<script>x</script>' }}</p>\n")
    inspect(tmp_path / "sim" / "inventory", tmp_path / "report", "-e", "gpuops_report_templates=%s" % site)
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    md = (tmp_path / "report" / "report.md").read_text()
    assert md.startswith("SITE 16 nodes")
    for host, node in report["nodes"].items():
        assert ("; %s %s" % (host, node["status"]) in md) == (node["status"] != "healthy" or bool(node["findings"]))
    html = (tmp_path / "report" / "report.html").read_text()
    assert html == "<h1>%s</h1><p>&lt;script&gt;x&lt;/script&gt;</p>\n" % report["generated_at"]
    # a directory that does not exist fails the run before any report is written
    proc = inspect(tmp_path / "sim" / "inventory", tmp_path / "r2", "-e", "gpuops_report_templates=/nonexistent",
                   check=False)  # fmt: skip
    assert proc.returncode != 0 and "report templates directory /nonexistent does not exist" in proc.stdout
    assert not (tmp_path / "r2").exists()


def test_every_catalogue_fault(tmp_path):
    """--faults all: every catalogue fault on its own node (plus a dead leaf); the key must match exactly.
    80 nodes: the catalogue has outgrown 64 (58 faulty nodes outside the dead leaf's rack)."""
    generate(tmp_path / "sim", 80, faults="all", seed=3)
    inspect(tmp_path / "sim" / "inventory", tmp_path / "report")
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    key = json.loads((tmp_path / "sim" / "answer_key.json").read_text())
    missing, unkeyed = compare_with_key(report, key)
    assert missing == [], missing
    assert unkeyed == [], unkeyed
    expected_cluster = {(c["check"], c["component"]) for c in key.get("cluster", [])}
    got_cluster = {(c["check"], c["component"]) for c in report["summary"]["cluster_findings"]}
    assert expected_cluster <= got_cluster, (expected_cluster, got_cluster)


def test_unreachable_hosts_get_findings_and_a_rack_finding(tmp_path):
    hosts = {
        "dead-%02d" % i: {
            "ansible_host": "127.0.0.1",
            "ansible_port": 9,
            "gpuops_rack": "rack-x",
            "gpuops_leaf_switch": "leaf-%d" % i,
            "gpuops_power_domain": "pdu-%d" % i,
        }
        for i in range(1, 5)
    }
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        yaml.safe_dump(
            {
                "all": {
                    "children": {"gpu_nodes": {"hosts": hosts}},
                    "vars": {
                        "ansible_connection": "ssh",
                        "ansible_user": "nobody",
                        "ansible_ssh_common_args": "-o ConnectTimeout=3",
                    },
                }
            }
        )
    )
    inspect(inv, tmp_path / "report")
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["summary"]["status"]["unreachable"] == 4
    for host in hosts:
        checks = [f["check"] for f in report["nodes"][host]["findings"]]
        assert "node.unreachable" in checks
        assert report["nodes"][host]["status"] == "unreachable"
    comps = {(f["check"], f["component"]) for f in report["summary"]["cluster_findings"]}
    assert any(c[1] == "rack:rack-x" for c in comps), comps


def test_policy_typo_fails_the_run_naming_the_key(tmp_path):
    generate(tmp_path / "sim", 4, faults="none")
    proc = inspect(
        tmp_path / "sim" / "inventory",
        tmp_path / "report",
        "-e",
        '{"gpuops_policy_overrides": {"thresholds": {"temprature": {"memory_p2_c": 90}}}}',
        check=False,
    )
    assert proc.returncode != 0
    assert "temprature" in proc.stdout + proc.stderr


def test_one_override_changes_only_that_threshold(tmp_path):
    """Lower the memory temperature limit below the simulated HBM temperature: only that finding appears."""
    generate(tmp_path / "sim", 4, faults="none")
    inspect(tmp_path / "sim" / "inventory", tmp_path / "r0")
    base = json.loads((tmp_path / "r0" / "report.json").read_text())
    assert all(n["status"] == "healthy" for n in base["nodes"].values())
    inspect(
        tmp_path / "sim" / "inventory",
        tmp_path / "r1",
        "-e",
        '{"gpuops_policy_overrides": {"thresholds": {"temperature": {"memory_p2_c": 1}}}}',
    )
    over = json.loads((tmp_path / "r1" / "report.json").read_text())
    assert over["policy"]["hash"] != base["policy"]["hash"]
    for node in over["nodes"].values():
        checks = {f["check"] for f in node["findings"] if f["severity"] != "P3"}
        assert checks == {"gpu.temperature"}, checks


def test_runner_two_private_dirs_share_one_state_dir(tmp_path):
    """Two ansible_runner.run() calls (as AWX would: fresh private data dirs) share the state dir."""
    ansible_runner = pytest.importorskip("ansible_runner")
    sim = generate(tmp_path / "sim", 8, faults="ib_flap:1", seed=11)
    key = json.loads((sim / "answer_key.json").read_text())
    flap_host = next(h for h, v in key["hosts"].items() if any(e["check"] == "ib.link_flap" for e in v))
    inv = yaml.safe_load((sim / "inventory" / "hosts.yml").read_text())
    hosts = inv["all"]["children"]["gpu_nodes"]["hosts"]
    state = tmp_path / "state"
    reports = []
    # run 1 reads the earlier capture of the flapping node, run 2 the current one: only the state links them
    for i, capture_key in enumerate(("gpuops_previous_capture_dir", "gpuops_capture_dir")):
        run_hosts = {}
        for h, hv in hosts.items():
            hv = dict(hv)
            prev = hv.pop("gpuops_previous_capture_dir", None)
            if h == flap_host and capture_key == "gpuops_previous_capture_dir":
                hv["gpuops_capture_dir"] = prev
            run_hosts[h] = hv
        pdd = tmp_path / ("pdd%d" % i)
        (pdd / "inventory").mkdir(parents=True)
        (pdd / "inventory" / "hosts.yml").write_text(
            yaml.safe_dump({"all": {"children": {"gpu_nodes": {"hosts": run_hosts}}}})
        )
        shutil.copytree(sim / "inventory" / "group_vars", pdd / "inventory" / "group_vars")
        os.environ["PATH"] = "%s:%s" % (VENV_BIN, os.environ.get("PATH", ""))
        r = ansible_runner.run(
            private_data_dir=str(pdd),
            playbook=str(REPO / "playbooks" / "inspect.yml"),
            extravars={"gpuops_state_dir": str(state), "gpuops_report_dir": str(tmp_path / ("report%d" % i))},
            envvars={"ANSIBLE_COLLECTIONS_PATH": str(REPO / "build"), "ANSIBLE_CONFIG": str(REPO / "ansible.cfg")},
            quiet=True,
        )
        assert r.status == "successful", r.stdout.read()[-3000:]
        events = [e.get("event") for e in r.events]
        assert "playbook_on_stats" in events
        reports.append(json.loads((tmp_path / ("report%d" % i) / "report.json").read_text()))
    first = {f["check"] for f in reports[0]["nodes"][flap_host]["findings"]}
    second = {f["check"] for f in reports[1]["nodes"][flap_host]["findings"]}
    assert "ib.link_flap" not in first  # one reading: no delta yet
    assert "ib.link_flap" in second  # the second run saw the first run's counters
    assert (state / "hosts").exists() or any(state.iterdir())


FAKE_SCONTROL = """#!/bin/sh
# records every call; 'show node' lists the four simulated nodes IDLE (a stand-in for Slurm: no test bed here)
echo "$*" >> "%(log)s"
if [ "$1" = "show" ] && [ "$2" = "node" ]; then
  for n in 01 02 03 04; do
    printf 'NodeName=gpu-node-%%s Arch=x86_64 CoresPerSocket=1\\n   State=IDLE ThreadsPerCore=1\\n   Partitions=gpu\\n\\n' "$n"
  done
fi
exit 0
"""


def _edit_hosts(sim: Path, edit) -> None:
    path = sim / "inventory" / "hosts.yml"
    inv = yaml.safe_load(path.read_text())
    edit(inv["all"]["children"]["gpu_nodes"]["hosts"])
    path.write_text(yaml.safe_dump(inv))


def test_missing_capture_dir_is_error_and_auto_isolation_skips_it(tmp_path):
    """Issue 12 item 4: a mistyped capture path read as a dead node (P1 isolate) and auto-isolation drained it.

    Four simulated nodes: one really lost a GPU (a complete read: 7 of 8), another's capture directory does not
    exist. With gpuops_auto_isolate=true the isolate role runs against a recording scontrol: it is asked about the
    faulty node only; the other is reported `error` with no disruptive finding and never reaches Slurm.
    """
    sim = generate(tmp_path / "sim", 4, faults="gpu_missing:1", seed=7)
    key = json.loads((sim / "answer_key.json").read_text())
    faulty = [h for h, v in key["hosts"].items() if v]
    assert len(faulty) == 1, key["hosts"]
    faulty = faulty[0]
    blind = sorted(h for h in key["hosts"] if h != faulty)[0]
    missing = tmp_path / "typo" / blind

    def edit(hosts):
        hosts[blind]["gpuops_capture_dir"] = str(missing)

    _edit_hosts(sim, edit)
    log = tmp_path / "scontrol.log"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text(FAKE_SCONTROL % {"log": log})
    scontrol.chmod(0o755)
    inspect(
        sim / "inventory",
        tmp_path / "report",
        "-e",
        "gpuops_auto_isolate=true",
        "-e",
        "gpuops_allow_unaudited=true",  # auto-isolation needs the audit trail (issue 41): opted out, recorded in state
        "-e",
        "gpuops_state_dir=%s" % (tmp_path / "state"),
        "-e",
        json.dumps({"gpuops_slurm_controller": {"host": "localhost", "scontrol_path": str(scontrol)}}),
    )
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    node = report["nodes"][blind]
    assert node["status"] == "error", node["findings"]
    assert str(missing) in node["status_reason"]
    assert [f["check"] for f in node["findings"]] == ["collector.error"]
    assert not [f for f in node["findings"] if f["action"] in ("isolate", "reboot", "reset_gpu", "replace")]
    assert report["nodes"][faulty]["status"] == "faulty"
    calls = log.read_text()
    assert faulty in calls  # the isolate role did run, for the real fault
    assert blind not in calls, calls


def test_node_class_typo_stops_the_run_by_name(tmp_path):
    """Issue 12 item 5: `h100-sxm8` for `h100-sxm-8` switched every profile check off (an IB port down read healthy)."""
    sim = generate(tmp_path / "sim", 4, faults="ib_port_down:1", seed=7)

    def edit(hosts):
        hosts["gpu-node-02"]["gpuops_node_class"] = "h100-sxm8"

    _edit_hosts(sim, edit)
    proc = inspect(sim / "inventory", tmp_path / "report", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "unknown node class 'h100-sxm8'" in out and "known classes: h100-sxm-8" in out and "gpu-node-02" in out
    assert not (tmp_path / "report").exists()  # stopped before anything was read or written


@pytest.mark.parametrize(
    "extra",
    [
        {"gpuops_targets": "{{ lookup('pipe', 'touch MARKER') }}"},
        {"gpuops_targets": "gpu_nodes", "gpuops_ticket": "{% if lookup('pipe', 'touch MARKER') %}x{% endif %}"},
        {"gpuops_targets": "gpu_nodes", "gpuops_ticket": "T-1\n"},
    ],
    ids=["targets-expression", "ticket-statement", "ticket-newline"],
)
def test_hostile_targets_or_ticket_stop_the_inspection_before_anything_runs(tmp_path, extra):
    """Issue 12: an inspection's targets and ticket come from AWX, EDA or a person: refused, never templated."""
    sim = generate(tmp_path / "sim", 4, faults="ib_port_down:1", seed=7)
    marker = tmp_path / "marker"
    data = {k: v.replace("MARKER", str(marker)) for k, v in extra.items()}
    proc = inspect(sim / "inventory", tmp_path / "report", "-e", json.dumps(data), check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert not marker.exists()
    assert not (tmp_path / "report").exists()
    assert ("gpuops_targets" in out) or ("gpuops_ticket" in out), out[-3000:]
