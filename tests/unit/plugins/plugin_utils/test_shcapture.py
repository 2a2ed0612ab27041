# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shell capture (_shcapture.py): the script really runs under /bin/sh against a simulated node (fake tools on
PATH that print a real capture's files, a sysfs tree built from its listing), and what it sends back must give the
same capture files and the same facts as the Python capture (_livecapture) on the same node. Then what must not
work: a cut answer, forged markers, options that try to break out of their quotes, a hung tool."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pytest

from ansible_collections.gpuops.cluster.plugins.module_utils.collectors import livecapture as _livecapture
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    livetree as _livetree,
    shcapture as _shcapture,
)

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
CAPTURE = os.path.join(REPO, "inventories", "sim", ".sim", "captures", "gpu-node-01")
#: what a node has besides its GPU tools: the shell capture's own needs, and cat/sleep for the fake tools
BASE_TOOLS = ("sh", "cat", "sleep", "grep", "mktemp", "timeout", "rm", "stat")
ALL = ["gpu", "kernel", "ib", "bmc", "slurm", "node"]


def _tool(bindir, name, body):
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


@pytest.fixture()
def node(tmp_path, monkeypatch):
    """A simulated node: PATH holds the base tools and fake nvidia-smi, ibstat, ipmitool, journalctl, scontrol,
    mlxlink answering from the sim capture; ``root`` holds its InfiniBand sysfs tree."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for real in BASE_TOOLS:
        target = shutil.which(real, path="/usr/bin:/bin")
        assert target, real
        os.symlink(target, str(bindir / real))
    cap = CAPTURE
    _tool(
        bindir,
        "nvidia-smi",
        'case "$*" in "-q -x") cat %s/nvidia-smi-q.xml;; "-q") cat %s/nvidia-smi-q.txt;;'
        ' "nvlink -s") cat %s/nvidia-smi-nvlink-s.txt;; "nvlink -e") cat %s/nvidia-smi-nvlink-e.txt;;'
        " *) echo bad >&2; exit 2;; esac" % (cap, cap, cap, cap),
    )
    _tool(bindir, "ibstat", "cat %s/ibstat.txt" % cap)
    _tool(
        bindir,
        "ipmitool",
        'case "$*" in "sdr elist") f=sdr;; "sel elist") f=sel;; "fru print") f=fru;; "mc info") f=mc-info;;'
        ' "sel info") f=sel-info;; *) exit 2;; esac; cat %s/ipmitool-$f.txt' % cap,
    )
    _tool(bindir, "journalctl", "cat %s/kernel.log" % cap)
    _tool(bindir, "scontrol", "cat %s/scontrol-show-node.txt" % cap)
    _tool(bindir, "mlxlink", 'cat %s/mlxlink-"$2".txt' % cap)
    root = tmp_path / "root"
    ib = root / "sys" / "class" / "infiniband"
    with open(os.path.join(cap, "infiniband-sysfs.txt"), encoding="utf-8") as fh:
        for line in fh:
            rel, _sep, value = line.rstrip("\n").partition(":")
            path = ib / rel[2:] if rel.startswith("./") else ib / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(value + "\n")
    monkeypatch.setenv("PATH", str(bindir))
    return {"bin": bindir, "root": str(root)}


def on_node(cmd, in_data):
    """What the connection runs for the action plugin: ``/bin/sh -c '<cmd> && sleep 0'`` (ansible-core's
    _low_level_execute_command), the script on stdin."""
    return subprocess.run(
        ["/bin/sh", "-c", cmd + " && sleep 0"], input=in_data, capture_output=True, timeout=60, check=False
    )


def shell_capture(options, cut=None):
    """Run the script as the action plugin has it run (see :func:`on_node`); ``cut``: keep only that many characters
    of the answer. Returns (tree, raw stdout)."""
    opts = _shcapture.check_options(options)
    token = _shcapture.new_token()
    proc = on_node("/bin/sh", _shcapture.build_script(token, opts).encode())
    proc.stdout, proc.stderr = proc.stdout.decode(), proc.stderr.decode()
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    out = proc.stdout if cut is None else proc.stdout[:cut]
    return _shcapture.to_tree(out, token, opts), proc.stdout


ABSENT_SERVICE = {"name": "gpuops-test-absent", "unit": "gpuops-test-absent", "process": "gpuops-absent"}


def _options(node, **kw):
    opts = {"timeout": 10, "sysfs_root": node["root"], "domains": list(ALL)}
    # /proc: a mount whose statfs numbers do not move while tests run beside this one (the two captures compare them);
    # one service no test runs: the NVIDIA services' verdicts read the host's process table, where another test
    # (test_node_services) starts and stops processes named like them at any moment (the comparison flaked)
    opts["node_options"] = {"mounts": ["/proc", "/nonexistent-mount"], "services": [ABSENT_SERVICE]}
    opts.update(kw)
    return opts


def _facts(tree, mounts=("/proc", "/nonexistent-mount")):
    options = {"node": {"mounts": list(mounts), "services": [ABSENT_SERVICE]}, "bmc": {"mode": "inband"}}
    facts = _livetree.parse_tree(tree, options=options)
    facts.pop("timings", None)
    for key in ("collected_at", "evidence_time"):
        facts.pop(key, None)
    for domain in facts.values():  # each capture's own clock (the two captures may straddle a second)
        if isinstance(domain, dict):
            domain.pop("collected_at", None)
    return facts


def test_the_shell_capture_gives_the_python_captures_files_and_facts(node):
    py = _livecapture.capture_tree(**_options(node))["tree"]
    sh, _raw = shell_capture(_options(node))
    assert set(py) == set(sh)
    assert len(sh) > 15  # every evidence file of the sim node, the listing and the optics included
    for name in sorted(py):
        if name in ("capture.json", "node.json"):
            continue
        assert sh[name] == py[name], name
    assert json.loads(sh["node.json"]) == json.loads(py["node.json"])  # the node collector, replayed
    meta_py, meta_sh = json.loads(py["capture.json"]), json.loads(sh["capture.json"])
    assert meta_sh["via"] == "shell" and not meta_sh.get("errors")
    assert (meta_sh["hostname"], meta_sh["boot_id"]) == (meta_py["hostname"], meta_py["boot_id"])
    for name, rec in meta_py["files"].items():
        if "rc" in rec and name != _livecapture._capture.SYSFS_IB_FLAT:
            assert meta_sh["files"][name]["rc"] == rec["rc"], name
    assert _facts(sh) == _facts(py)
    node_facts = _facts(sh)["node"]
    assert [m["present"] for m in node_facts["mounts"]] == [True, False]


def test_without_a_sysfs_listing_ibstat_stands_in_and_missing_tools_are_recorded(node):
    os.unlink(str(node["bin"] / "ipmitool"))
    opts = _options(node, sysfs_root="/nonexistent-root")
    py = _livecapture.capture_tree(**opts)["tree"]
    sh, _raw = shell_capture(opts)
    assert "ibstat.txt" in sh and "infiniband-sysfs.txt" not in sh and sh["ibstat.txt"] == py["ibstat.txt"]
    meta = json.loads(sh["capture.json"])
    assert meta["files"]["ipmitool-sdr.txt"]["error"] == "ipmitool not found on PATH"
    assert not any(name.startswith("ipmitool") for name in sh)
    assert _facts(sh) == _facts(py)


def test_the_text_form_only_when_the_xml_failed(node):
    _tool(node["bin"], "nvidia-smi", '[ "$2" = "-x" ] && { echo "Failed to initialize NVML" >&2; exit 9; }; echo text')
    sh, _raw = shell_capture(_options(node, domains=["gpu"]))
    assert sh["nvidia-smi-q.xml"] == "Failed to initialize NVML\n" and sh["nvidia-smi-q.txt"] == "text\n"
    meta = json.loads(sh["capture.json"])
    assert meta["files"]["nvidia-smi-q.xml"]["rc"] == 9
    assert "NVML" in meta["files"]["nvidia-smi-q.xml"]["stderr"]


def test_only_the_domains_asked_for_are_captured(node):
    sh, raw = shell_capture(_options(node, domains=["bmc"]))
    assert sorted(sh) == sorted(["capture.json", *_livecapture.DOMAIN_FILES["bmc"]])
    assert "nvidia-smi" not in raw and json.loads(sh["capture.json"])["domains"] == ["bmc"]


def test_a_hung_tool_is_killed_after_its_timeout_and_the_rest_is_kept(node):
    _tool(node["bin"], "scontrol", "sleep 30")
    t0 = time.monotonic()
    sh, _raw = shell_capture(_options(node, timeout=1, domains=["slurm", "gpu"]))
    assert time.monotonic() - t0 < 10
    rec = json.loads(sh["capture.json"])["files"]["scontrol-show-node.txt"]
    assert rec["timed_out"] is True and rec["rc"] is None
    assert "nvidia-smi-q.xml" in sh
    facts = _facts(sh)
    assert facts["slurm"]["errors"] and facts["gpu"]["count"] == 8


@pytest.mark.parametrize("fraction", [0.01, 0.2, 0.5, 0.9, 0.999])
def test_a_cut_answer_drops_the_cut_section_and_never_judges_half_a_file(node, fraction):
    _full, raw = shell_capture(_options(node))
    tree, _raw = shell_capture(_options(node), cut=int(len(raw) * fraction))
    meta = json.loads(tree["capture.json"])
    assert meta["errors"]  # the cut is recorded
    facts = _facts(tree)
    # whatever was cut is not there: a GPU file is whole or absent, never half read into fewer GPUs
    if "nvidia-smi-q.xml" in tree:
        assert tree["nvidia-smi-q.xml"] == _full["nvidia-smi-q.xml"]
        assert facts["gpu"]["count"] == 8
    else:
        assert facts["gpu"]["errors"]


def test_a_tool_cannot_forge_or_end_a_section(node):
    # a tool that prints marker-like lines (it cannot know this run's token) and no final newline
    fake = "@@gpuops:%s E nvidia-smi-q.xml 0 1\n@@gpuops:%s Z\nlast line, no newline" % ("0" * 32, "f" * 32)
    _tool(node["bin"], "scontrol", "printf '%s'" % fake.replace("\n", "\\n"))
    sh, _raw = shell_capture(_options(node, domains=["slurm", "gpu"]))
    assert sh["scontrol-show-node.txt"] == fake
    assert "nvidia-smi-q.xml" in sh and not json.loads(sh["capture.json"]).get("errors")


def test_an_answer_that_is_not_ours_is_no_capture():
    opts = _shcapture.check_options({"timeout": 5, "domains": ["gpu"]})
    tree = _shcapture.to_tree("Welcome to node7\nPermission denied\n", _shcapture.new_token(), opts)
    assert set(tree) == {"capture.json"}
    assert json.loads(tree["capture.json"])["errors"]
    assert not _livetree.parse_tree(tree)["gpu"]["gpus"]


def test_values_stay_inside_their_quotes(node, tmp_path):
    canary = tmp_path / "pwned"
    evil = "/mnt/x'; touch %s; echo '$(touch %s)`touch %s`" % (canary, canary, canary)
    sh, raw = shell_capture(_options(node, domains=["node"], node_options={"mounts": [evil], "services": ["a'b"]}))
    assert not canary.exists()
    [mount] = _facts(sh, mounts=[evil])["node"]["mounts"]
    assert mount["path"] == evil and mount["present"] is False


@pytest.mark.parametrize(
    "options, msg",
    [
        ({"kernel_since": "today; rm -rf /"}, "kernel_since"),
        ({"kernel_since": "$(id)"}, "kernel_since"),
        ({"slurm_node": "n1 n2"}, "slurm_node"),
        ({"slurm_node": "-rf"}, "slurm_node"),
        ({"sysfs_root": "relative/path"}, "sysfs_root"),
        ({"sysfs_root": "/a\nb"}, "sysfs_root"),
        ({"dcgm_level": 9}, "dcgm_level"),
        ({"dcgm_level": True}, "dcgm_level"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": "soon"}, "timeout"),
        ({"node_options": {"mounts": ["no-slash"]}}, "mount"),
        ({"node_options": {"mounts": ["/a\0b"]}}, "mount"),
    ],
)
def test_options_that_cannot_go_into_the_script_are_refused(options, msg):
    with pytest.raises(_shcapture.ShellCaptureError, match=msg):
        _shcapture.build_script(_shcapture.new_token(), _shcapture.check_options(options))


@pytest.mark.parametrize(
    "since", ["2026-12-02 10:00:00", "-1h", "yesterday", "@1733133600", "2026-12-02T10:00:00+00:00"]
)
def test_journalctl_times_are_taken(node, since):
    _tool(node["bin"], "journalctl", 'echo "$*"')
    sh, _raw = shell_capture(_options(node, domains=["kernel"], kernel_since=since))
    assert sh["kernel.log"] == "-k -o short-iso --no-pager --since %s\n" % since


def test_quote_is_one_shell_word():
    for text in ["plain", "it's", "'", "", '$(id) `id` \\ " ;|&', "a\nb"]:
        argv = ["/bin/sh", "-c", "printf '%s' " + _shcapture.quote(text)]
        out = subprocess.run(argv, capture_output=True, text=True, check=True)
        assert out.stdout == text
    with pytest.raises(_shcapture.ShellCaptureError):
        _shcapture.quote("a\0b")


def _action(args, low_level):
    from unittest import mock

    from ansible_collections.gpuops.cluster.plugins.action import collect_info as collect_action

    task = mock.MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = False
    action = collect_action.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None
    )
    with mock.patch.object(action, "_low_level_execute_command", side_effect=low_level) as low, mock.patch.object(
        action, "_execute_module", side_effect=AssertionError("no module runs on the node")
    ):
        return action.run(task_vars={}), low


def test_the_action_runs_one_shell_command_and_parses_its_answer(node):
    def connection(cmd, sudoable=True, in_data=None, **_kw):
        proc = on_node(cmd, in_data)
        return {"rc": proc.returncode, "stdout": proc.stdout.decode(), "stderr": proc.stderr.decode()}

    args = {"parse_on": "controller", "result_format": "json", "sysfs_root": node["root"], "mounts": ["/"]}
    result, low = _action(args, connection)
    assert low.call_count == 1 and low.call_args.kwargs.get("sudoable") is True
    assert low.call_args.kwargs.get("in_data")  # the script on stdin: no terminal over SSH (-tt only without it)
    facts = json.loads(result["facts_json"])
    assert facts["parsed_on"] == "controller" and facts["mode"] == "live"
    assert facts["gpu"]["count"] == 8 and len(facts["ib"]["hcas"]) == 8 and facts["node"]["mounts"][0]["present"]
    packed, _low = _action(dict(args, result_format="capture"), connection)
    assert json.loads(_livetree.unpack(packed["capture_packed"])["capture.json"])["via"] == "shell"


def test_a_node_whose_shell_did_not_run_the_script_is_a_failed_collection():
    result, _low = _action(
        {"parse_on": "controller", "result_format": "capture"},
        lambda cmd, sudoable=True, **_kw: {"rc": 127, "stdout": "", "stderr": "/bin/sh: not found"},
    )
    assert result["failed"] and "did not run (rc 127)" in result["msg"] and "capture_packed" not in result


def test_the_action_refuses_an_option_the_script_cannot_take():
    from ansible.errors import AnsibleActionFail

    with pytest.raises(AnsibleActionFail, match="kernel_since"):
        _action({"parse_on": "controller", "kernel_since": "x; reboot"}, lambda *a, **k: {})


def test_a_section_cut_inside_its_end_line_is_dropped():
    token = _shcapture.new_token()
    whole = "@@gpuops:%s B kernel.log\nline\n\n@@gpuops:%s E kernel.log 124 1\n" % (token, token)
    out = _shcapture.parse_output(whole[:-3], token)  # "... E kernel.log 1": the status cut from 124
    assert "kernel.log" not in out.sections and out.problems and not out.complete
    assert _shcapture.parse_output(whole + "@@gpuops:%s Z\n" % token, token).sections["kernel.log"][1] == "124"


def test_a_fifo_or_device_in_the_sysfs_tree_is_never_opened(node):
    port = os.path.join(node["root"], "sys", "class", "infiniband", "mlx5_0", "ports", "1", "counters")
    os.mkfifo(os.path.join(port, "planted_fifo"))
    os.symlink("/dev/zero", os.path.join(port, "planted_zero"))
    t0 = time.monotonic()
    sh, _raw = shell_capture(_options(node, domains=["ib"], timeout=5))
    assert time.monotonic() - t0 < 4  # no read blocked until the timeout
    listing = sh["infiniband-sysfs.txt"]
    assert "planted" not in listing and "./mlx5_0/ports/1/state:" in listing


def test_imex_is_captured_by_both_captures_and_read(node):
    # a GB200 node: nvidia-imex-ctl answers in the formats of gpu-knowledge-2026.md 3.4 (tests/fixtures/imex/SOURCE)
    fix = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "imex")
    _tool(
        node["bin"],
        "nvidia-imex-ctl",
        'case "$*" in "-q") cat %s/daemon-waiting.txt;; "-N -j") cat %s/domain-degraded.json;; *) exit 2;; esac'
        % (fix, fix),
    )
    py = _livecapture.capture_tree(**_options(node, domains=["gpu"]))["tree"]
    sh, _raw = shell_capture(_options(node, domains=["gpu"]))
    for tree in (py, sh):
        assert tree["nvidia-imex-ctl-q.txt"] == "WAITING_FOR_PEERS\n"
        imex = _livetree.parse_tree(tree)["gpu"]["imex"]
        assert imex == {"configured": True, "daemon": "WAITING_FOR_PEERS", "domain": "DEGRADED"}
    # a node without the tool (the sim node's default): no file, no imex facts, no error
    os.unlink(str(node["bin"] / "nvidia-imex-ctl"))
    sh, _raw = shell_capture(_options(node, domains=["gpu"]))
    assert "nvidia-imex-ctl-q.txt" not in sh and "imex" not in _livetree.parse_tree(sh)["gpu"]
