# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters as users meet them: a real ansible-playbook run (localhost, no test bed) that feeds real tool outputs
through ``lookup('file', ...) | gpuops.cluster.<filter>``, asserts in the play, and writes what it computed so the
test can compare it with the Python functions; a broken file fails its task with the parser's message. And
``ansible-doc -t filter`` lists every filter of plugins/filter/ and renders each one's documentation."""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpuops.cluster.plugins.filter import (
    dcgm_diag,
    findings_by,
    ibstat,
    ipmi_sdr,
    ipmi_sel,
    isolation_targets,
    kernel_events,
    nvidia_smi,
    nvlink,
    scontrol_nodes,
    xid_info,
)
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report

REPO = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
FIX = os.path.join(REPO, "tests", "fixtures")
BIN = os.path.dirname(sys.executable)

FILES = {
    "xml": "nvidia-smi-xml/datakit-8xv100s-pcie-460.73.01.xml",
    "text": "nvidia-smi-q-text/nvgpuexp-h100-590.48.01-load.txt",
    "nvl": "nvlink/nvgpuexp-h100-590.48.01-nvlink-s.txt",
    "klog": "xid-kmsg/gpud-xid48-63-94-dbe-rowremap-contained.log",
    "ibstat": "ibstat/gpud-h100-cx7-ib-some-down.txt",
    "sdr": "ipmitool-sdr/openipmi-sim-sdr-elist-faults.txt",
    "sel": "ipmitool-sel/intel-s2600-sel-elist-fan-psu-redundancy.txt",
    "scontrol": "scontrol-show-node/cshuji-slurm-4nodes-gpu-m60-rtx2080-drain.txt",
    "dcgm": "dcgmi-diag/dcgm-issue254-v100-dcgm441-pcie-fail.txt",
}

PLAYBOOK = r"""
- name: The gpuops.cluster filters in a play
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Parse every real output once
      ansible.builtin.set_fact:
        __gpu_xml: "{{ lookup('file', f.xml) | gpuops.cluster.nvidia_smi }}"
        __gpu_text: "{{ lookup('file', f.text) | gpuops.cluster.nvidia_smi(nvlink=lookup('file', f.nvl)) }}"
        __nvl: "{{ lookup('file', f.nvl) | gpuops.cluster.nvlink }}"
        __kernel: "{{ lookup('file', f.klog) | gpuops.cluster.kernel_events }}"
        __ib: "{{ lookup('file', f.ibstat) | gpuops.cluster.ibstat }}"
        __sdr: "{{ lookup('file', f.sdr) | gpuops.cluster.ipmi_sdr }}"
        __sel: "{{ lookup('file', f.sel) | gpuops.cluster.ipmi_sel }}"
        __slurm: "{{ lookup('file', f.scontrol) | gpuops.cluster.scontrol_nodes }}"
        __dcgm: "{{ lookup('file', f.dcgm) | gpuops.cluster.dcgm_diag }}"
        __xid79: "{{ 79 | gpuops.cluster.xid_info }}"
        __by_rack: "{{ lookup('file', report) | gpuops.cluster.findings_by('rack') }}"
        __by_severity: "{{ lookup('file', report) | gpuops.cluster.findings_by }}"
        __targets: "{{ lookup('file', report) | from_json | gpuops.cluster.isolation_targets }}"

    - name: Values an operator would pick out
      ansible.builtin.assert:
        that:
          - __gpu_xml.count == 8
          - __gpu_xml.gpus | map(attribute='name') | unique | list == ['Tesla V100S-PCIE-32GB']
          - __gpu_text.gpus[0].nvlink.links | selectattr('state', 'eq', 'up') | list | length > 0
          - __nvl.gpus | length == __gpu_text.gpus | length
          - __xid_names[:3] == ['ROBUST_CHANNEL_GPU_ECC_DBE', 'INFOROM_DRAM_RETIREMENT_EVENT', 'ROBUST_CHANNEL_CONTAINED_ERROR']
          - __ib_down == ['mlx5_2', 'mlx5_7', 'mlx5_8']
          - "'Leak Detect' in __sdr_critical"
          - __sel.sel | selectattr('severity', 'eq', 'critical') | list | length > 0
          - __slurm.nodes | selectattr('flags', 'contains', 'DRAIN') | map(attribute='name') | list == ['oxygen-04']
          - __dcgm.overall == 'fail'
          - __xid79.severity == 'P1' and __xid79.action == 'reboot'
          - __by_severity.P1 | map(attribute='host') | list == ['gpu-node-07']
          - __targets.nodes == ['gpu-node-07']
        quiet: true
      vars:
        __xid_names: "{{ __kernel.events | selectattr('kind', 'eq', 'xid') | map(attribute='code')
          | map('gpuops.cluster.xid_info') | map(attribute='name') | list }}"
        __ib_down: "{{ __ib.hcas | subelements('ports') | selectattr('1.state', 'eq', 'DOWN') | map(attribute='0.name') | list }}"
        __sdr_critical: "{{ __sdr.sensors | selectattr('status', 'eq', 'critical') | map(attribute='name') | list }}"

    - name: Write what the play computed
      ansible.builtin.copy:
        dest: "{{ out }}"
        mode: "0600"
        content: "{{ {'gpu_xml': __gpu_xml, 'gpu_text': __gpu_text, 'nvl': __nvl, 'kernel': __kernel, 'ib': __ib,
          'sdr': __sdr, 'sel': __sel, 'slurm': __slurm, 'dcgm': __dcgm, 'xid79': __xid79, 'by_rack': __by_rack,
          'by_severity': __by_severity, 'targets': __targets} | to_json }}"

    - name: A truncated capture fails its task with the parser's message
      block:
        - name: Parse a cut file
          ansible.builtin.debug:
            msg: "{{ lookup('file', cut) | gpuops.cluster.nvidia_smi(source='gpu-node-07/nvidia-smi-q.xml') }}"
      rescue:
        - name: Keep the error
          ansible.builtin.copy:
            dest: "{{ out }}.err"
            mode: "0600"
            content: "{{ ansible_failed_result.msg }}"
"""


def _report_file(path):
    def f(host, check, severity, action, component, code=None):
        return {
            "host": host,
            "check": check,
            "severity": severity,
            "action": action,
            "component": component,
            "code": code,
            "message": "%s %s" % (check, component),
            "id": "%s:%s:%s:%s" % (host, check, component, code),
        }

    nodes = {
        "gpu-node-07": {
            "status": "faulty",
            "rack": "r02",
            "findings": [f("gpu-node-07", "gpu.xid", "P1", "isolate", "gpu3", "79")],
        },
        "gpu-node-02": {
            "status": "degraded",
            "rack": "r01",
            "findings": [f("gpu-node-02", "ib.port", "P2", "monitor", "mlx5_2/1")],
        },
        "gpu-node-01": {"status": "healthy", "rack": "r01", "findings": []},
    }
    rep = _report.build_report("2026-12-02T10:00:00Z", nodes, [], "2026.12.0", "abc")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(_report.to_json(rep))
    return rep


def _env():
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, "build"), ANSIBLE_NOCOLOR="1")
    env["ANSIBLE_CONFIG"] = os.path.join(REPO, "ansible.cfg")
    env.pop("ANSIBLE_STDOUT_CALLBACK", None)
    return env


def _read(rel):
    with open(os.path.join(FIX, rel), encoding="utf-8") as fh:
        return fh.read()


def test_filters_in_a_real_play(tmp_path):
    rep = _report_file(tmp_path / "report.json")
    xml = _read(FILES["xml"])
    cut = tmp_path / "cut.xml"
    cut.write_text(xml[: xml.index('<gpu id="00000000:00:12.0">') + 900])
    (tmp_path / "pb.yml").write_text(PLAYBOOK)
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n" % sys.executable
    )
    extra = {
        "f": {k: os.path.join(FIX, v) for k, v in FILES.items()},
        "report": str(tmp_path / "report.json"),
        "cut": str(cut),
        "out": str(tmp_path / "out.json"),
    }
    proc = subprocess.run(
        [
            os.path.join(BIN, "ansible-playbook"),
            "-i",
            str(tmp_path / "hosts.yml"),
            str(tmp_path / "pb.yml"),
            "-e",
            json.dumps(extra),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "[WARNING]" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    got = json.loads((tmp_path / "out.json").read_text())
    # what Jinja and Ansible's templating handed back is what the Python functions return
    assert got["gpu_xml"] == nvidia_smi.nvidia_smi(xml)
    assert got["gpu_text"] == nvidia_smi.nvidia_smi(_read(FILES["text"]), nvlink=_read(FILES["nvl"]))
    assert got["nvl"] == nvlink.nvlink(_read(FILES["nvl"]))
    assert got["kernel"]["events"] == kernel_events.kernel_events(_read(FILES["klog"]))["events"]
    assert got["ib"] == ibstat.ibstat(_read(FILES["ibstat"]))
    assert got["sdr"] == ipmi_sdr.ipmi_sdr(_read(FILES["sdr"]))
    assert got["sel"] == ipmi_sel.ipmi_sel(_read(FILES["sel"]))
    assert got["slurm"] == scontrol_nodes.scontrol_nodes(_read(FILES["scontrol"]))
    assert got["dcgm"] == dcgm_diag.dcgm_diag(_read(FILES["dcgm"]))
    assert got["xid79"] == xid_info.xid_info(79)
    assert got["by_rack"] == findings_by.findings_by(rep, "rack") and list(got["by_rack"]) == ["r01", "r02"]
    assert list(got["by_severity"]) == ["P0", "P1", "P2", "P3"]
    assert got["targets"] == isolation_targets.isolation_targets(rep)
    err = (tmp_path / "out.json.err").read_text()
    assert "gpuops.cluster.nvidia_smi: nvsmi_xml: gpu-node-07/nvidia-smi-q.xml:" in err, err
    assert "truncated nvidia-smi XML after 5 complete GPU(s)" in err and "Traceback" not in err


FILTERS = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, "plugins", "filter", "*.py")))


def test_ansible_doc_lists_and_renders_every_filter():
    assert len(FILTERS) >= 11 and "nvidia_smi" in FILTERS and "isolation_targets" in FILTERS
    listed = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "-t", "filter", "--list", "--json", "gpuops.cluster"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=True,
    )
    names = json.loads(listed.stdout)
    assert sorted(names) == ["gpuops.cluster." + f for f in FILTERS], listed.stdout
    assert all(names.values()), names  # a short description each
    docs = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "-t", "filter", "--json"] + ["gpuops.cluster." + f for f in FILTERS],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=False,
    )
    assert docs.returncode == 0 and "ERROR" not in docs.stderr, docs.stderr
    data = json.loads(docs.stdout)
    assert sorted(data) == sorted(names)
    for name, entry in data.items():
        doc = entry["doc"]
        assert doc["name"] == name.split(".")[-1] and doc["description"] and "_input" in doc["options"], name
        assert name in entry["examples"], name  # every example uses its own filter
        assert entry["return"]["_value"].get("sample") is not None, name
    text = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "-t", "filter", "gpuops.cluster.findings_by"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(),
        check=True,
    ).stdout
    assert "choices: [severity, check, rack, host, action]" in text


@pytest.mark.parametrize("name", FILTERS)
def test_every_filter_is_in_docs_filters_md(name):
    with open(os.path.join(REPO, "docs", "filters.md"), encoding="utf-8") as fh:
        text = fh.read()
    assert "## `gpuops.cluster.%s`" % name in text


def doc_examples():
    """``(expression, documented output)`` of every example in docs/filters.md: a ```jinja block, then ```yaml."""
    with open(os.path.join(REPO, "docs", "filters.md"), encoding="utf-8") as fh:
        text = fh.read()
    pairs = re.findall(r"```jinja\n(\{\{.*?\}\})\n```\n\n[^`]*?```yaml\n(.*?)```", text, re.S)
    return [(expr, yaml.safe_load(out)) for expr, out in pairs]


def shown_in(shown, actual, where="value"):
    """Every key and list item the docs show has that value in the actual output (a list may be cut short)."""
    if isinstance(shown, dict):
        assert isinstance(actual, dict), "%s: %r is not a mapping" % (where, actual)
        for k, v in shown.items():
            assert k in actual, "%s: no key %r" % (where, k)
            shown_in(v, actual[k], "%s.%s" % (where, k))
    elif isinstance(shown, list):
        assert isinstance(actual, list) and len(shown) <= len(actual), "%s: %r vs %r" % (where, shown, actual)
        for i, v in enumerate(shown):
            shown_in(v, actual[i], "%s[%d]" % (where, i))
    else:
        assert shown == actual, "%s: the docs say %r, the filter gives %r" % (where, shown, actual)


def test_docs_examples_run_as_documented(tmp_path):
    examples = doc_examples()
    exprs = [expr for expr, _shown in examples]
    names = {re.search(r"gpuops\.cluster\.(\w+)", expr).group(1) for expr in exprs}
    assert names == set(FILTERS), names  # one example per filter at least
    (tmp_path / "tests").symlink_to(os.path.join(REPO, "tests"))  # lookup('file') paths as the docs write them
    # one set_fact (no module run per example), then one file with every result
    facts = {"__ex%d" % i: expr for i, expr in enumerate(exprs)}
    out = "{{ [%s] | to_json }}" % ", ".join("__ex%d" % i for i in range(len(examples)))
    tasks = [
        {"name": "Every example of docs/filters.md", "ansible.builtin.set_fact": facts},
        {"name": "Write", "ansible.builtin.copy": {"dest": str(tmp_path / "out.json"), "mode": "0600", "content": out}},
    ]
    play = {"name": "docs/filters.md", "hosts": "localhost", "gather_facts": False, "tasks": tasks}
    (tmp_path / "pb.yml").write_text(yaml.safe_dump([play]))
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n" % sys.executable
    )
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "pb.yml")],
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = json.loads((tmp_path / "out.json").read_text())
    for (expr, shown), actual in zip(examples, results):
        shown_in(shown, actual, expr)
