# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpuops.cluster.untrusted_input: outside text becomes inert data under a private fact, or is refused by name.

The pure checks with data, then the action in real ansible-playbook runs (local, a few seconds): a trusted
template in an extra var is refused before anything renders it (a marker file is never created), the same
text marked !unsafe passes literally, an author's template (play var) is rendered once, a bad id is refused
by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.template import is_trusted_as_template, trust_as_template

from ansible_collections.gpuops.cluster.plugins.action import untrusted_input as ui

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


# ------------------------------------------------------------------------------------------------- the checks
@pytest.mark.parametrize(
    "kind, value, want",
    [
        ("ids", "OPS-1234", "OPS-1234"),
        ("ids", 4711, "4711"),
        ("hosts", ["gpu-node-01", "gpu-node-02"], ["gpu-node-01", "gpu-node-02"]),
        ("hosts", "gpu-node-01, gpu-node-02", ["gpu-node-01", "gpu-node-02"]),
        ("hosts", "gpu-node-01\ngpu-node-02\n", ["gpu-node-01", "gpu-node-02"]),
        ("patterns", "gpu_nodes:!gpu-node-0[1:3],gpu-node-07", "gpu_nodes:!gpu-node-0[1:3],gpu-node-07"),
        ("patterns", ["gpu-node-01", "gpu-node-02"], "gpu-node-01,gpu-node-02"),
        ("text", "Xid 79 {{ not a template here }} {# #} {% %}", "Xid 79 {{ not a template here }} {# #} {% %}"),
        ("text", 79, "79"),
    ],
)
def test_check_accepts(kind, value, want):
    assert ui.check(kind, "v", value, known={"gpu-node-01", "gpu-node-02", "gpu-node-07"}) == want


@pytest.mark.parametrize(
    "kind, value, needle",
    [
        ("ids", "T-1\n", "is not an id"),  # `^...$` would accept the trailing newline
        ("ids", "T 1", "is not an id"),
        ("ids", "{{ x }}", "is not an id"),
        ("ids", True, "is not an id"),
        ("ids", "", "is not an id"),
        ("hosts", ["gpu-node-01\n"], "bad host names"),
        ("hosts", ["gpu-node-99"], "not in the inventory: gpu-node-99"),
        ("hosts", {"a": 1}, "must be a list"),
        ("patterns", "~gpu.*", "is not a host pattern"),
        ("patterns", "{{ groups }}", "is not a host pattern"),
        ("patterns", "all\n", "is not a host pattern"),
        ("text", "two\nlines", "control characters"),
        ("text", "x" * 1025, "longer than"),
        ("text", ["a"], "must be a string"),
    ],
)
def test_check_refuses_by_name(kind, value, needle):
    with pytest.raises(ui.InputError) as exc:
        ui.check(kind, "the_var", value, known={"gpu-node-01"})
    assert needle in str(exc.value) and "the_var" in str(exc.value)


def test_template_paths_only_trusted_strings():
    def looks(s):
        return "{{" in s or "{%" in s or "{#" in s

    trusted = trust_as_template("{{ lookup('pipe', 'id') }}")
    plain = "{{ lookup('pipe', 'id') }}"  # untrusted: Ansible never renders it
    assert is_trusted_as_template(trusted) and not is_trusted_as_template(plain)
    assert ui.template_paths(trusted, looks) == ["."]
    assert ui.template_paths(plain, looks) == []
    assert ui.template_paths({"a": [1, {"b": trusted}], "c": plain}, looks) == ["a[1].b"]
    assert ui.template_paths(trust_as_template("just text"), looks) == []


# -------------------------------------------------------------------------------------- the action, for real
PLAYBOOK = """---
- name: Probe the mechanism
  hosts: localhost
  gather_facts: false
  vars:
    author_reason: "{{ 'rendered by ' ~ 'the author' }}"
  tasks:
    - name: Take the inputs as data
      gpuops.cluster.untrusted_input:
        text: [probe_reason, author_reason]
        ids: [probe_ticket]
        hosts: [probe_nodes]
        required: [probe_ticket]
        fact: __probe_in
    - name: Use the inert copies in templates
      ansible.builtin.copy:
        dest: "{{ out }}"
        mode: "0600"
        content: "{{ {'reason': __probe_in.probe_reason | default(none), 'author': __probe_in.author_reason,
          'ticket': __probe_in.probe_ticket, 'nodes': __probe_in.probe_nodes | default([]),
          'line': __probe_in.probe_reason | default('') ~ ' [' ~ __probe_in.probe_ticket ~ ']'} | to_json }}"
"""


@pytest.fixture()
def play(tmp_path):
    pb = tmp_path / "probe.yml"
    pb.write_text(PLAYBOOK)  # author_reason: a template in a play var, as a role default would be
    inv = tmp_path / "hosts.yml"
    inv.write_text(
        "all:\n  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "    gpu-node-01: {ansible_connection: local}\n" % sys.executable
    )

    def run(*extra):
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, "build"), ANSIBLE_NOCOLOR="1")
        env["ANSIBLE_CONFIG"] = os.path.join(REPO, "ansible.cfg")
        proc = subprocess.run(
            [
                os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                "-i",
                str(inv),
                str(pb),
                "-e",
                json.dumps({"out": str(tmp_path / "out.json")}),
                *extra,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        out = tmp_path / "out.json"
        data = json.loads(out.read_text()) if out.exists() else None
        if out.exists():
            out.unlink()
        return proc, data

    return tmp_path, run


def test_action_refuses_trusted_templates_in_extra_vars(play):
    tmp_path, run = play
    marker = tmp_path / "marker"
    for hostile in (
        "{{ lookup('pipe', 'touch %s') }}" % marker,
        "{%% set x = lookup('pipe', 'touch %s') %%}" % marker,
        "{# comment #}",
        "#jinja2:variable_start_string:'<<',variable_end_string:'>>'\n<< lookup('pipe', 'touch %s') >>" % marker,
    ):
        proc, data = run("-e", json.dumps({"probe_ticket": "T-1", "probe_reason": hostile}))
        assert proc.returncode == 2 and data is None, proc.stdout[-2000:]
        assert "extra vars probe_reason hold template syntax" in proc.stdout
        assert not marker.exists()
    # nested in a named variable: refused all the same
    proc, data = run(
        "-e", json.dumps({"probe_ticket": "T-1", "probe_nodes": ["{{ lookup('pipe', 'touch %s') }}" % marker]})
    )
    assert proc.returncode == 2 and "extra vars probe_nodes[0] hold template syntax" in proc.stdout
    assert not marker.exists()
    # an operator's own template in a variable the task does not name is theirs (all_extra_vars opts in)
    proc, data = run("-e", json.dumps({"probe_ticket": "T-1", "other": "{{ 'ok' }}"}))
    assert proc.returncode == 0 and data["ticket"] == "T-1", proc.stdout[-2000:]


def test_action_keeps_unsafe_text_literal_and_renders_author_templates(play):
    tmp_path, run = play
    marker = tmp_path / "marker"
    hostile = "{{ lookup('pipe', 'touch %s') }} {# c #} {%% if true %%}x{%% endif %%}" % marker
    ev = tmp_path / "ev.yml"
    ev.write_text(
        'probe_reason: !unsafe %s\nprobe_ticket: !unsafe "OPS-9"\nprobe_nodes: [!unsafe "gpu-node-01"]\n'
        % json.dumps(hostile)
    )
    proc, data = run("-e", "@%s" % ev)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert data == {
        "reason": hostile,
        "author": "rendered by the author",
        "ticket": "OPS-9",
        "nodes": ["gpu-node-01"],
        "line": "%s [OPS-9]" % hostile,
    }
    assert not marker.exists()


@pytest.mark.parametrize(
    "ev, needle",
    [
        ({"probe_ticket": "T-1\n"}, "probe_ticket 'T-1\\\\n' is not an id"),
        ({"probe_ticket": "T-1", "probe_nodes": ["gpu-node-99"]}, "probe_nodes: not in the inventory: gpu-node-99"),
        ({"probe_reason": "x"}, "probe_ticket is required"),
    ],
)
def test_action_refuses_bad_identifiers_by_name(play, ev, needle):
    _tmp, run = play
    proc, data = run("-e", json.dumps(ev))
    assert proc.returncode == 2 and data is None
    assert needle in proc.stdout, proc.stdout[-2000:]


# ------------------------------------------------------------------------ issue 35: targets are hosts, _raw_params
GROUPS = {"all": ["gpu-node-01", "gpu-node-02"], "ungrouped": [], "gpu_nodes": ["gpu-node-01", "gpu-node-02"]}
KNOWN = {"gpu-node-01", "gpu-node-02"}


@pytest.mark.parametrize(
    "value, want",
    [
        ("gpu-node-01", "gpu-node-01"),
        ("gpu-node-01,gpu-node-02", "gpu-node-01,gpu-node-02"),
        (["gpu-node-02", "gpu-node-01"], "gpu-node-02,gpu-node-01"),
    ],
)
def test_targets_accept_inventory_hosts(value, want):
    assert ui.check_targets("gpuops_targets", value, KNOWN, GROUPS) == want


@pytest.mark.parametrize(
    "value, needle",
    [
        ("all", "all is a group"),
        ("gpu_nodes", "gpu_nodes is a group"),
        ("gpu-node-01,gpu_nodes", "gpu_nodes is a group"),
        ("gpu-node-0*", "not host names: 'gpu-node-0*'"),
        ("gpu_nodes:!gpu-node-01", "not host names"),
        ("gpu_nodes:&rack_a", "not host names"),
        ("gpu-node-0[1:2]", "not host names"),
        ("~gpu.*", "not host names"),
        ("@/tmp/hosts", "not host names"),
        ("gpu-node-01,", "name one or more inventory hosts"),
        ("", "name one or more inventory hosts"),
        ("localhost", "not in the inventory: localhost"),  # the implicit localhost is no target
        ("gpu-node-09", "not in the inventory: gpu-node-09"),
        (7, "must be inventory host names"),
    ],
)
def test_targets_refuse_groups_patterns_and_unknown_hosts(value, needle):
    with pytest.raises(ui.InputError) as exc:
        ui.check_targets("gpuops_targets", value, KNOWN, GROUPS)
    assert needle in str(exc.value), str(exc.value)
    if "group" in needle or "not host names" in needle:
        assert "-e gpuops_allow_target_patterns=true" in str(exc.value)


def test_targets_take_a_pattern_only_with_the_operator_flag():
    assert ui.check_targets("t", "gpu_nodes:!gpu-node-01", KNOWN, GROUPS, allow_patterns=True) == (
        "gpu_nodes:!gpu-node-01"
    )
    with pytest.raises(ui.InputError, match="is not a host pattern"):
        ui.check_targets("t", "~gpu.*", KNOWN, GROUPS, allow_patterns=True)
    assert [ui.flag(v) for v in (True, "true", "True", "yes", "1", 1)] == [True] * 6
    assert [ui.flag(v) for v in (False, "false", "no", "0", "", None, [], "tru")] == [False] * 8


@pytest.mark.parametrize(
    "args, keys, meant",
    [
        (["isolate_reason=Xid 79"], ["isolate_reason"], {"isolate_reason": "Xid 79"}),
        (
            ["a=1 isolate_reason=Xid 79 on GPU 3"],
            ["a", "isolate_reason"],
            {"a": "1", "isolate_reason": "Xid 79 on GPU 3"},
        ),
        (["isolate_reason=Xid 79 gpuops_ticket=T-1"], ["isolate_reason", "gpuops_ticket"], None),
        (["r='quoted words' x y"], ["r"], {"r": "quoted words x y"}),
    ],
)
def test_cut_extra_vars_finds_the_argument_and_what_was_meant(args, keys, meant):
    (cut,) = ui.cut_extra_vars(args)
    assert cut[0] == keys
    if meant is not None:
        assert cut[1] == meant


def test_cut_extra_vars_ignores_what_ansible_does_not_split():
    assert ui.cut_extra_vars(["a=1 b=2", '{"r": "Xid 79"}', "@/tmp/vars.yml", "[1, 2]", "", 'r="Xid 79"']) == []
    assert ui.raw_params_error(["a=1"], {"a": "1"}) is None
    msg = ui.raw_params_error(["isolate_reason=Xid 79"], {"isolate_reason": "Xid", "_raw_params": "79"})
    assert """-e '{"isolate_reason": "Xid 79"}'""" in msg and "cut at a space" in msg
    # _raw_params from a vars file: still refused, with the generic advice
    assert "_raw_params" in ui.raw_params_error(["@/tmp/v.yml"], {"_raw_params": "x"})


TARGETS_PLAYBOOK = """---
- name: Probe the targets check
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Take the targets as data
      gpuops.cluster.untrusted_input:
        targets: [probe_targets]
        text: [probe_reason]
        fact: __probe_in
    - name: Keep what passed
      ansible.builtin.copy:
        dest: "{{ out }}"
        mode: "0600"
        content: "{{ {'targets': __probe_in.probe_targets | default(none)} | to_json }}"
"""


def test_action_targets_from_outside_are_hosts_unless_the_operator_allows_patterns(play):
    tmp_path, _run = play
    (tmp_path / "probe.yml").write_text(TARGETS_PLAYBOOK)
    (tmp_path / "hosts.yml").write_text(
        "all:\n  hosts:\n    localhost: {ansible_connection: local, ansible_python_interpreter: %s}\n"
        "  children:\n    gpu_nodes:\n      hosts:\n        gpu-node-01: {ansible_connection: local}\n"
        "        gpu-node-02: {ansible_connection: local}\n" % sys.executable
    )
    for value in ("all", "gpu_nodes", "gpu-node-0*", "gpu_nodes:!gpu-node-02"):
        proc, data = _run("-e", json.dumps({"probe_targets": value}))
        assert proc.returncode == 2 and data is None, proc.stdout[-2000:]
        assert "gpuops_allow_target_patterns" in proc.stdout, proc.stdout[-2000:]
        proc, data = _run("-e", json.dumps({"probe_targets": value}), "-e", "gpuops_allow_target_patterns=true")
        assert proc.returncode == 0 and data == {"targets": value}, proc.stdout[-2000:]
    proc, data = _run("-e", "probe_targets=gpu-node-01,gpu-node-02")
    assert proc.returncode == 0 and data == {"targets": "gpu-node-01,gpu-node-02"}, proc.stdout[-2000:]
    # a reason cut at a space is refused too, with the JSON to use
    proc, data = _run("-e", "probe_targets=gpu-node-01", "-e", "probe_reason=Xid 79")
    assert proc.returncode == 2 and data is None
    assert """-e '{\\"probe_reason\\": \\"Xid 79\\"}'""" in proc.stdout, proc.stdout[-2000:]
