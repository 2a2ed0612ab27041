# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every command in README.md, docs/, runbooks/, roles/*/README.md and the playbooks' header comments is one an
operator can paste at 3 a.m.: it names an existing playbook in the installed form (gpuops.cluster.<name>),
ansible-core parses its options, every -e sets a variable the collection reads (no typos, no dead names, the
one ticket variable gpuops_ticket), and free text keeps all its words (issue 21, observation 6:
`-e 'isolate_reason=Xid 79'` set the Slurm reason to "gpuops: Xid [INC-4]"). docs/inventory.md names every
gpuops_* variable the code reads, and inventories/example parses with the real ansible-inventory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import doc_commands as dc  # noqa: E402

ROOT = dc.ROOT
COLL = dc.Collection(ROOT)


def _all():
    commands, problems = [], []
    for path in dc.doc_sources(ROOT):
        found, bad = dc.extract(path, ROOT)
        commands += found
        problems += bad
    return commands, problems


COMMANDS, SPLIT_PROBLEMS = _all()


def _cmd(text, source="negative-case.md"):
    return dc.Command(source, 1, text, argv=dc._unbracket(dc._tokens(text)))


# --------------------------------------------------------------------------------- the documented commands
def test_the_documents_hold_commands_of_every_kind():
    tools = {c.argv[0] for c in COMMANDS}
    assert {"ansible-playbook", "gpuops-runbook"} <= tools
    playbooks = {a for c in COMMANDS for a in c.argv if a.startswith(dc.FQCN)}
    # every playbook the collection ships is documented with a command
    assert {dc.FQCN + p for p in COLL.playbooks} <= playbooks, sorted(COLL.playbooks)
    assert len(COMMANDS) >= 80, len(COMMANDS)


def test_every_command_can_be_split_as_the_shell_would():
    assert SPLIT_PROBLEMS == []


def test_every_documented_command_checks_out():
    problems = ["%s\n    %s" % (c.where, p) for c in COMMANDS for p in dc.check(c, COLL)]
    assert problems == [], "%d problems:\n%s" % (len(problems), "\n".join(problems))


def test_multi_word_reasons_reach_the_playbook_whole():
    """Observation 6: the documented isolate command's reason arrives with all its words."""
    reasons = {}
    for c in COMMANDS:
        for key, value in dc.multiword_values(c).items():
            reasons.setdefault(key, []).append(value)
    assert "isolate_reason" in reasons, "no documented command passes a multi-word isolate_reason"
    assert all(len(v.split()) > 1 for v in reasons["isolate_reason"])
    assert any(v.startswith("Xid 79") for v in reasons["isolate_reason"])


def test_runbooks_use_only_the_installed_form():
    """Runbooks name playbooks only as gpuops.cluster.<name>, in prose too (commands everywhere: checked above)."""
    for path in dc.doc_sources(ROOT):
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("runbooks/"):
            with open(path, encoding="utf-8") as fh:
                assert "playbooks/" not in fh.read(), "%s names a source path playbooks/..." % rel


# ---------------------------------------------------------------------------- negative cases: the check bites
@pytest.mark.parametrize(
    "text, expected",
    [
        # observation 6: the form README.md and docs/isolation.md used
        (
            'ansible-playbook -i inv gpuops.cluster.isolate -e \'{"isolate_nodes": ["gpu-node-07"]}\' '
            "-e gpuops_ticket=INC-4 -e 'isolate_reason=Xid 79'",
            "lost words",
        ),
        (
            'ansible-playbook gpuops.cluster.isolate -e gpuops_ticket=INC-4 -e isolate_reason="Xid 79 gpu3"',
            "lost words",
        ),
        ("ansible-playbook -i inv playbooks/isolate.yml -e gpuops_ticket=T-1", "installed name gpuops.cluster.isolate"),
        ("ansible-playbook -i inv gpuops.cluster.isolat -e gpuops_ticket=T-1", "no playbook gpuops.cluster.isolat"),
        ("ansible-playbook gpuops.cluster.isolate -e isolate_reasn=flaky", "-e isolate_reasn: no playbook"),
        ("ansible-playbook gpuops.cluster.isolate -e isolate_ticket=T-1", "use gpuops_ticket"),
        ("ansible-playbook gpuops.cluster.resume -e isolate_mode=down", "-e isolate_mode: no playbook"),
        ("ansible-playbook gpuops.cluster.inspect --chek", "unrecognized arguments: --chek"),
        ("ansible-playbook gpuops.cluster.inspect -e ./vars.yml", "-e cannot be parsed"),
        ("gpuops-runbook lookup --alert NoSuchAlert", "no entry"),
        ("gpuops-runbook lokup --alert GpuXid79", "gpuops-runbook rejects it"),
        ("ansible-doc -t role gpuops.cluster.isolat", "no such role"),
        ("ansible-playbook -i inventories/<site> gpuops.cluster.inspect", "shell redirection"),
        ("ansible-playbook gpuops.cluster.resume -e gpuops_ticket=T-1 [-e resume_force=true]", "passed literally"),
        ("ansible-playbook gpuops.cluster.isolate --check ...", "not a command"),
    ],
)
def test_the_check_refuses(text, expected):
    problems = dc.check(_cmd(text), COLL)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    "text",
    [
        'ansible-playbook gpuops.cluster.isolate -e \'{"isolate_reason": "Xid 79 on GPU 3"}\' -e gpuops_ticket=T-1',
        # key=value quoting Ansible itself understands keeps the words too
        "ansible-playbook gpuops.cluster.isolate -e \"isolate_reason='Xid 79 on GPU 3'\" -e gpuops_ticket=T-1",
        "ansible-playbook -i inv gpuops.cluster.inspect -e gpuops_targets=gpu-node-07 --check -l gpu-node-07",
        "gpuops-runbook lookup --check gpu.xid --code 79",
        "ansible-doc -t role gpuops.cluster.isolate",
    ],
)
def test_the_check_accepts(text):
    assert dc.check(_cmd(text), COLL) == []


def test_ansible_itself_splits_the_old_form():
    """The reason the check exists, shown with ansible-core's own parser."""
    _pb, extra, err = dc.parse_playbook_args(
        ["ansible-playbook", "gpuops.cluster.isolate", "-e", "isolate_reason=Xid 79"]
    )
    assert err is None and extra == {"isolate_reason": "Xid", "_raw_params": "79"}
    _pb, extra, _err = dc.parse_playbook_args(
        ["ansible-playbook", "x.yml", "-e", '{"isolate_reason": "Xid 79 on GPU 3"}']
    )
    assert extra == {"isolate_reason": "Xid 79 on GPU 3"}


def test_extraction_reads_fences_continuations_inline_spans_and_headers(tmp_path):
    md = tmp_path / "x.md"
    md.write_text(
        "Run `ansible-playbook gpuops.cluster.inspect -e gpuops_targets=n1` now, or\n"
        "```sh\n"
        "ansible-playbook -i inv gpuops.cluster.isolate \\\n"
        "    -e gpuops_ticket=T-1   # trailing comment\n"
        'echo \'{"ticket": "T-1", "runbook": "inspect"}\' | gpuops-runbook run -i inv\n'
        "key: gpuops-runbook run   # YAML mentioning the tool is not a command\n"
        "```\n"
        "`gpuops-runbook` alone is a mention.\n"
    )
    found, problems = dc.extract(str(md), str(tmp_path))
    assert problems == []
    assert [c.argv for c in found] == [
        ["ansible-playbook", "gpuops.cluster.inspect", "-e", "gpuops_targets=n1"],
        ["ansible-playbook", "-i", "inv", "gpuops.cluster.isolate", "-e", "gpuops_ticket=T-1"],
        ["gpuops-runbook", "run", "-i", "inv"],
    ]
    assert json.loads(found[2].stdin)["runbook"] == "inspect"
    pb = tmp_path / "p.yml"
    pb.write_text(
        "---\n# Do it:\n#   ansible-playbook gpuops.cluster.resume [-e resume_force=true] \\\n#     -l n1\n- hosts: all\n"
    )
    found, _skipped = dc.extract(str(pb), str(tmp_path))
    assert found[0].argv == ["ansible-playbook", "gpuops.cluster.resume", "-e", "resume_force=true", "-l", "n1"]
    bad = tmp_path / "bad.md"
    bad.write_text("```\nansible-playbook gpuops.cluster.isolate -e 'isolate_reason=unbalanced\n```\n")
    assert dc.extract(str(bad), str(tmp_path))[1]


# --------------------------------------------------------------------------------- the inventory reference
def _inventory_page():
    with open(os.path.join(ROOT, "docs", "inventory.md"), encoding="utf-8") as fh:
        return fh.read()


def test_inventory_page_names_every_gpuops_variable_the_code_reads():
    page = _inventory_page()
    missing = {n: files for n, files in dc.gpuops_names_in_code(ROOT).items() if "`%s`" % n not in page}
    assert missing == {}, "docs/inventory.md does not mention (add a row): %s" % json.dumps(missing, indent=1)


def test_inventory_page_names_nothing_the_code_does_not_read():
    code = dc.gpuops_names_in_code(ROOT)
    stale = sorted({n for n in re.findall(r"`(gpuops_[a-z0-9_]*[a-z0-9])`", _inventory_page()) if n not in code})
    assert stale == [], "docs/inventory.md names variables nothing reads: %s" % stale


def test_inventory_page_lists_the_ticket_aliases_in_one_place():
    page = _inventory_page()
    aliases = COLL.ticket_aliases()
    assert aliases and all("`%s`" % a in page for a in aliases), sorted(aliases)
    for path in dc.doc_sources(ROOT):
        if path.endswith(("inventory.md", ".yml")) or "/roles/" in path:
            continue
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        for alias in aliases:
            assert "-e %s=" % alias not in text, "%s passes %s: use gpuops_ticket" % (path, alias)


def test_example_inventory_parses_with_ansible_inventory():
    """inventories/example: the live-cluster example, vault file included (dummy password file next to it)."""
    inv = os.path.join(ROOT, "inventories", "example")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    proc = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-inventory"),
            "-i",
            os.path.join(inv, "hosts.yml"),
            "--vault-password-file",
            os.path.join(inv, "vault-password.example"),
            "--list",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert "WARNING" not in proc.stderr, proc.stderr
    nodes = data["gpu_nodes"]["children"]
    assert len(nodes) >= 2 and all(g.startswith("rack_") for g in nodes)
    hostvars = data["_meta"]["hostvars"]
    node = sorted(h for g in nodes for h in data[g]["hosts"])[0]
    hv = hostvars[node]
    for var in ("gpuops_rack", "gpuops_node_class", "gpuops_bmc_address", "gpuops_bmc_password", "gpuops_profiles"):
        assert var in hv, var
    assert "__ansible_vault" in json.dumps(hv["vault_gpuops_bmc_password"])  # committed encrypted
    # ... and the mapping gpuops_bmc_password -> the vaulted value decrypts with the documented password file
    debug = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible"), "-i", os.path.join(inv, "hosts.yml"), node]
        + ["--vault-password-file", os.path.join(inv, "vault-password.example")]
        + ["-m", "ansible.builtin.debug", "-a", "var=gpuops_bmc_password"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert debug.returncode == 0 and '"gpuops_bmc_password": "example-only-change-me"' in debug.stdout, debug
    assert hv["gpuops_slurm_controller"]["host"] and hv["gpuops_slurm_controller"]["scontrol_path"]
    assert hv["gpuops_maintenance_windows"]
    assert hv["gpuops_node_class"] in hv["gpuops_profiles"]


# ------------------------------------------------------------------------------------------- dead references
_TOP = ("docs", "runbooks", "roles", "playbooks", "plugins", "tests", "tools", "awx", "extensions", "inventories")
_PATH_REF = re.compile(
    r"(?<![\w./<{$-])((?:%s)/(?:[\w.-]+/)*[\w.-]+\.(?:md|yml|yaml|json|py|j2|sh|txt))\b" % "|".join(_TOP)
)
_MD_REF = re.compile(r"(?<![\w./<{$-])([\w-]+\.md)\b")
#: files the collection writes (named in the docs, never in the repository)
_OUTPUTS = {"report.md"}


def test_docs_name_only_files_that_exist():
    """A path the docs give (docs/x.md, awx/collections/requirements.yml, a test file) exists in the repository,
    and a bare Markdown name (formats.md) is a file the collection ships."""
    mds = {
        name
        for top in _TOP + (".",)
        for _root, _dirs, names in (os.walk(os.path.join(ROOT, top)) if top != "." else [("", [], os.listdir(ROOT))])
        for name in names
        if name.endswith(".md")
    }
    dead = []
    for path in dc.doc_sources(ROOT):
        if path.endswith(".yml"):
            continue
        with open(path, encoding="utf-8") as fh:
            for num, line in enumerate(fh, 1):
                for ref in _PATH_REF.findall(line):
                    stem = os.path.splitext(os.path.basename(ref))[0]
                    here = os.path.join(os.path.dirname(path), ref)  # extensions/eda/README.md: relative to eda/
                    if stem not in ("x", "test_x") and not any(map(os.path.exists, (os.path.join(ROOT, ref), here))):
                        dead.append("%s:%d: %s" % (os.path.relpath(path, ROOT), num, ref))
                dead += [
                    "%s:%d: %s" % (os.path.relpath(path, ROOT), num, ref)
                    for ref in _MD_REF.findall(line)
                    if ref not in mds and ref not in _OUTPUTS
                ]
    assert dead == [], "\n".join(dead)
