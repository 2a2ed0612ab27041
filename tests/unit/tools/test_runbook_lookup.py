# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpuops-runbook lookup` prints the command an operator pastes (issue 14): for every catalogue entry the printed
ansible-playbook lines pass the same checks as the documented commands (installed playbook name, options
ansible-core accepts, variables the collection reads, gpuops_ticket, free text whole in JSON -e), and `--json`
keeps the raw catalogue entry."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.dirname(HERE))

import doc_commands as dc  # noqa: E402
from gpuops_runbook import catalog, cli, command  # noqa: E402

DATA = catalog.load(os.path.join(ROOT, "runbooks", "catalog.yml"))
COLL = dc.Collection(ROOT)


def _printed_commands(text):
    """lookup's own commands (the catalogue's), before the runbook's steps it prints after them."""
    own = text.split(command.STEPS_MARK)[0]
    return [
        dc.Command("lookup", n, line, argv=dc._tokens(line))
        for n, line in enumerate(own.splitlines(), 1)
        if line.startswith("ansible-playbook ")
    ]


@pytest.mark.parametrize("entry_id", [e["id"] for e in catalog.entries(DATA)])
def test_lookup_prints_commands_that_check_out(entry_id, capsys):
    assert cli.main(["lookup", "--runbook", entry_id]) == 0
    out = capsys.readouterr().out
    cmds = _printed_commands(out)
    entry = catalog.by_id(DATA, entry_id)
    assert len(cmds) == (1 if entry["change_class"] == "read_only" else 2), out
    for cmd in cmds:
        assert dc.check(cmd, COLL) == [], (cmd.text, dc.check(cmd, COLL))
        assert cmd.argv[3] == command.playbook_name(entry)
        _pb, extra, _err = dc.parse_playbook_args(cmd.argv)
        assert extra["gpuops_ticket"] == "TICKET"
        for key, value in (entry["extra_vars"] or {}).items():
            assert extra[key] == value  # free text arrives whole (e.g. "Xid 79 GPU fell off the bus")
    if len(cmds) == 2:
        assert cmds[0].argv[-1] == "--check" and cmds[1].argv == cmds[0].argv[:-1]
    assert ("gpuops_change_id=CHANGE" in out.split(command.STEPS_MARK)[0]) is entry["approval_required"]
    assert "runbooks/%s" % entry["runbook"] in out


def test_lookup_fills_in_node_ticket_and_inventory(capsys):
    argv = ["lookup", "--alert", "GpuXid79", "--node", "gpu-node-07", "--node", "gpu-node-08"]
    assert cli.main(argv + ["--ticket", "INC-4711", "-i", "inventories/prod"]) == 0
    out = capsys.readouterr().out
    cmd = _printed_commands(out)[1]
    _pb, extra, _err = dc.parse_playbook_args(cmd.argv)
    assert extra == {
        "isolate_nodes": ["gpu-node-07", "gpu-node-08"],
        "isolate_reason": "Xid 79 GPU fell off the bus",
        "gpuops_ticket": "INC-4711",
    }
    assert cmd.argv[:4] == ["ansible-playbook", "-i", "inventories/prod", "gpuops.cluster.isolate"]
    assert "# replace:" not in out


def test_lookup_uses_gpuops_targets_when_the_entry_names_no_node_variable(capsys):
    assert cli.main(["lookup", "--check", "gpu.ecc", "--node", "gpu-node-07"]) == 0
    _pb, extra, _err = dc.parse_playbook_args(_printed_commands(capsys.readouterr().out)[0].argv)
    assert extra["gpuops_targets"] == "gpu-node-07" and "gpu_reset_ticket" not in extra


def test_lookup_quotes_a_single_quote_in_text_for_the_shell():
    entry = dict(catalog.by_id(DATA, "gpu_fell_off_bus"), extra_vars={"isolate_reason": "it's Xid 79; rm -rf /"})
    line = command.render(entry, ["gpu-node-07"], "T-1", "inv").splitlines()[-1]
    _pb, extra, err = dc.parse_playbook_args(dc._tokens(line))
    assert err is None and extra["isolate_reason"] == "it's Xid 79; rm -rf /"


def test_lookup_json_keeps_the_raw_entry(capsys):
    assert cli.main(["lookup", "--alert", "GpuXid79", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["entry"]["id"] == "gpu_fell_off_bus"
    assert cli.main(["lookup", "--check", "node.services", "--json"]) == 1
    assert "persistenced" in json.loads(capsys.readouterr().out)["unmapped_reason"]


def test_lookup_without_a_runbook_says_why_in_text(capsys):
    assert cli.main(["lookup", "--check", "node.services"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("# no runbook for node.services: ") and "persistenced" in out
    assert cli.main(["lookup", "--alert", "NoSuchAlert"]) == 1
    assert capsys.readouterr().out == "# no runbook for NoSuchAlert\n"


def test_lookup_output_pastes_into_a_real_shell(tmp_path):
    """The printed line, run by bash with a stand-in ansible-playbook that prints its argv as JSON."""
    fake = tmp_path / "ansible-playbook"
    fake.write_text("#!%s\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n" % sys.executable)
    fake.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tools"), PATH="%s:%s" % (tmp_path, os.environ["PATH"]))
    out = subprocess.run(
        [sys.executable, "-m", "gpuops_runbook", "lookup", "--runbook", "ib_port", "--node", "gpu-node-07"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    ).stdout
    line = _printed_commands(out)[1].text
    got = subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=env, timeout=60, check=True).stdout
    argv = json.loads(got)
    assert (
        json.loads(argv[argv.index("-e") + 1])["isolate_reason"]
        == catalog.by_id(DATA, "ib_port")["extra_vars"]["isolate_reason"]
    )


# ---------------------------------------------------------------------------------------------- issue 41
def _runbook_section(name, title):
    with open(os.path.join(ROOT, "runbooks", name), encoding="utf-8") as fh:
        text = fh.read()
    body = text[text.index("\n## %s\n" % title) + len(title) + 5 :]
    return body[: body.index("\n## ")] if "\n## " in body else body


def test_lookup_prints_the_whole_procedure(capsys):
    """Issue 41: lookup printed only the isolate commands. Now: the callback export, the runbook's preconditions
    (read from the page itself), the check-mode and real commands, then every later step (Xid 79: the wait for the
    drain, the reboot, the verification) for the given node and ticket."""
    argv = ["lookup", "--check", "gpu.xid", "--code", "79", "--node", "gpu-node-03", "--ticket", "INC-9"]
    assert cli.main(argv + ["-i", "inventories/prod"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert "export ANSIBLE_CALLBACKS_ENABLED=gpuops.cluster.audit GPUOPS_STATE_DIR=/var/lib/gpuops" in lines
    pre = [ln.strip() for ln in _runbook_section("gpu-fell-off-bus.md", "Preconditions").splitlines() if ln.strip()]
    assert pre and all(any(ln.endswith(p) for ln in lines) for p in pre), out
    assert "follow that incident" in out  # the cluster-incident precondition is printed, not skipped
    order = [
        next(i for i, ln in enumerate(lines) if ln.startswith("export ANSIBLE_CALLBACKS_ENABLED")),
        next(i for i, ln in enumerate(lines) if "PRECONDITIONS" in ln),
        next(i for i, ln in enumerate(lines) if ln.startswith("ansible-playbook ") and ln.endswith("--check")),
        next(i for i, ln in enumerate(lines) if ln.startswith("until ") and "sinfo -h -n gpu-node-03" in ln),
        next(i for i, ln in enumerate(lines) if "ansible.builtin.reboot" in ln and " gpu-node-03 " in ln),
        next(i for i, ln in enumerate(lines) if "gpuops.cluster.inspect -e gpuops_targets=gpu-node-03" in ln),
    ]
    assert order == sorted(order), order
    assert "gpu-node-07" not in out and "OPS-1234" not in out and "gpuops_ticket=INC-9" in out


@pytest.mark.parametrize("entry_id", [e["id"] for e in catalog.entries(DATA)])
def test_every_lookup_prints_its_runbook_s_preconditions_and_steps(entry_id, capsys):
    assert cli.main(["lookup", "--runbook", entry_id]) == 0
    out = capsys.readouterr().out
    entry = catalog.by_id(DATA, entry_id)
    assert "runbooks/%s#preconditions" % entry["runbook"] in out and "export ANSIBLE_CALLBACKS_ENABLED" in out
    if entry["runbook"] != "README.md":  # the read-only inspection's page has no Run section
        assert command.STEPS_MARK in out and "#   (none listed)" not in out


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--ticket", "INC 1"], "--ticket 'INC 1' is not a ticket id: one word of letters, digits and _.@+-"),
        (["--ticket", "INC-1\n"], "is not a ticket id"),
        (["--ticket=-x"], "is not a ticket id"),
        (["--ticket", "INC-1;rm -rf /"], "is not a ticket id"),
        (["--node", "gpu-node-07;reboot"], "--node 'gpu-node-07;reboot' is not an inventory host name"),
        (["--node", "gpu_nodes:!x"], "is not an inventory host name"),
        (["--node", "gpu-node-07\n"], "is not an inventory host name"),
        (["-i", "inv/$(touch x)"], "an inventory path of letters"),
    ],
)
def test_lookup_refuses_bad_node_ticket_and_inventory(argv, needle, capsys):
    """Full matches with the hook's rules (docs/operations.md: ids [A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}); nothing is
    printed to paste."""
    assert cli.main(["lookup", "--check", "gpu.xid", "--code", "79"] + argv) == 2
    cap = capsys.readouterr()
    assert needle in cap.err and cap.out == ""
