# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX as data (awx/) without an AWX server: job templates point at existing playbooks, surveys follow the AWX
survey spec and ask only for variables their playbook takes, the schedule's rrule parses, the workflow graph
is sound with its approval gates, and playbooks/awx_configure.yml passes the syntax check and builds the
workflow nodes (run up to the first API call). The AWX boundary: ALLOW_JINJA_IN_EXTRA_VARS=never is configured,
nothing a job receives needs templating, and survey answers written as AWX writes them stay literal text."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AWX = os.path.join(ROOT, "awx")
DATA = yaml.safe_load(open(os.path.join(AWX, "controller.yml"), encoding="utf-8"))
TEMPLATES = DATA["awx_job_templates"]
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}
BIN = os.path.dirname(sys.executable)


def _question_problems(q, where, seen):
    problems = [
        "%s: missing %s" % (where, key) for key in ("question_name", "variable", "type", "required") if key not in q
    ]
    var = q.get("variable", "")
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", str(var)):
        problems.append("%s: variable is not an identifier" % where)
    if var in seen:
        problems.append("%s: duplicate variable" % where)
    seen.add(var)
    if q.get("type") not in SURVEY_TYPES:
        problems.append("%s: type %r not one of %s" % (where, q.get("type"), sorted(SURVEY_TYPES)))
    if not isinstance(q.get("required"), bool):
        problems.append("%s: required must be a boolean" % where)
    return problems + _choice_problems(q, where) + _number_problems(q, where)


def _choice_problems(q, where):
    if q.get("type") not in ("multiplechoice", "multiselect"):
        return []
    choices = q.get("choices")
    if isinstance(choices, str):
        choices = choices.split("\n")
    if not choices or not all(isinstance(c, str) and c for c in choices):
        return ["%s: choices must be a non-empty list of strings" % where]
    if q.get("default") not in ("", None) and q["default"] not in choices:
        return ["%s: default %r not among the choices" % (where, q["default"])]
    return []


def _number_problems(q, where):
    problems = []
    if q.get("type") == "integer" and q.get("default") not in ("", None) and not isinstance(q["default"], int):
        problems.append("%s: integer default must be an int" % where)
    for key in ("min", "max"):
        if key in q and not isinstance(q[key], int):
            problems.append("%s: %s must be an int" % (where, key))
    if isinstance(q.get("min"), int) and isinstance(q.get("max"), int) and q["min"] > q["max"]:
        problems.append("%s: min > max" % where)
    return problems


def validate_survey(spec):
    """Problems of an AWX survey spec (the JSON AWX stores in survey_spec)."""
    problems = ["missing %s" % key for key in ("name", "description", "spec") if key not in spec]
    if not isinstance(spec.get("spec"), list) or not spec.get("spec"):
        return problems + ["spec must be a non-empty list"]
    seen = set()
    for i, q in enumerate(spec["spec"]):
        problems += _question_problems(q, "spec[%d] %s" % (i, q.get("variable")), seen)
    return problems


def playbook_vocabulary(playbook):
    """Text of the playbook and of the argument specs/defaults of the gpuops roles it uses."""
    text = open(os.path.join(ROOT, playbook), encoding="utf-8").read()
    out = [text]
    for role in set(re.findall(r"gpuops\.cluster\.([a-z_]+)", text)):
        for rel in ("meta/argument_specs.yml", "defaults/main.yml"):
            path = os.path.join(ROOT, "roles", role, rel)
            if os.path.isfile(path):
                out.append(open(path, encoding="utf-8").read())
    return "\n".join(out)


def test_validator_catches_bad_surveys():
    bad = {
        "name": "x",
        "spec": [
            {"question_name": "a", "variable": "1x", "type": "choice", "required": "yes"},
            {
                "question_name": "b",
                "variable": "m",
                "type": "multiplechoice",
                "required": True,
                "choices": ["a"],
                "default": "z",
            },
            {
                "question_name": "c",
                "variable": "m",
                "type": "integer",
                "required": True,
                "default": "5",
                "min": 3,
                "max": 1,
            },
        ],
    }
    problems = " | ".join(validate_survey(bad))
    for needle in (
        "missing description",
        "not an identifier",
        "type 'choice'",
        "required must be",
        "not among",
        "duplicate",
        "int",
        "min > max",
    ):
        assert needle in problems, needle


def test_required_templates_present_and_unique():
    names = [t["name"] for t in TEMPLATES]
    assert len(names) == len(set(names))
    playbooks = {t["playbook"] for t in TEMPLATES}
    for pb in ("inspect", "isolate", "resume", "upgrade", "onboard", "replace"):
        assert "playbooks/%s.yml" % pb in playbooks


# Under ALLOW_JINJA_IN_EXTRA_VARS=never the job template cannot turn the survey text into the role's list (that was
# Jinja in its extra_vars): playbooks/isolate.yml and resume.yml take *_nodes_text themselves, split it and validate
# each name with a full match (tests/unit/test_isolate_nodes_text.py runs that for real).
@pytest.mark.parametrize("tpl", TEMPLATES, ids=[t["name"] for t in TEMPLATES])
def test_job_template(tpl):
    assert os.path.isfile(os.path.join(ROOT, tpl["playbook"])), "%s: %s does not exist" % (tpl["name"], tpl["playbook"])
    spec = json.load(open(os.path.join(AWX, "surveys", tpl["survey"]), encoding="utf-8"))
    assert validate_survey(spec) == []
    vocab = playbook_vocabulary(tpl["playbook"]) + json.dumps(tpl.get("extra_vars") or {})
    unknown = [q["variable"] for q in spec["spec"] if q["variable"] not in vocab]
    assert unknown == [], "%s asks for variables %s that %s does not use" % (tpl["name"], unknown, tpl["playbook"])
    # disruptive = never two at once (awx_configure.yml sets allow_simultaneous: not disruptive)
    read_only = ("inspect", "slice_open", "service_report", "backup", "restore_drill")
    assert tpl["disruptive"] is (tpl["playbook"] not in ["playbooks/%s.yml" % p for p in read_only])


def test_every_survey_file_is_valid_and_used():
    used = {t["survey"] for t in TEMPLATES} | {w["survey"] for w in DATA["awx_workflows"]}
    files = {f for f in os.listdir(os.path.join(AWX, "surveys")) if f.endswith(".json")}
    assert files == used
    for f in files:
        assert validate_survey(json.load(open(os.path.join(AWX, "surveys", f), encoding="utf-8"))) == [], f


#: what each schedule must do, written from the issues (15 min inspections; issue 39: the quarter's report on the
#: quarter's first day, a nightly backup, a monthly drill), as the dates dateutil's rrule gives for 2026
SCHEDULES = {
    "gpuops inspect every 15 minutes": ["2026-01-01T00:00:00", "2026-01-01T00:15:00", "2026-01-01T00:30:00"],
    "gpuops sliced inspection every 15 minutes": ["2026-01-01T00:00:00", "2026-01-01T00:15:00", "2026-01-01T00:30:00"],
    "gpuops quarterly service report": ["2026-01-01T06:00:00", "2026-04-01T06:00:00", "2026-07-01T06:00:00"],
    "gpuops nightly backup": ["2026-01-01T02:00:00", "2026-01-02T02:00:00", "2026-01-03T02:00:00"],
    "gpuops monthly restore drill": ["2026-01-15T10:00:00", "2026-02-15T10:00:00", "2026-03-15T10:00:00"],
}


def test_schedule_rrule_parses():
    from dateutil import rrule

    names = {t["name"] for t in TEMPLATES}
    assert DATA["awx_schedules"]
    workflows = {w["name"] for w in DATA["awx_workflows"]}
    assert sorted(s["name"] for s in DATA["awx_schedules"]) == sorted(SCHEDULES)
    for s in DATA["awx_schedules"]:
        assert s.get("job_template") in names or s.get("workflow") in workflows
        assert s["rrule"].startswith("DTSTART:") and " RRULE:" in s["rrule"]
        rule = rrule.rrulestr(s["rrule"].replace(" RRULE:", "\nRRULE:"))
        assert [t.strftime("%Y-%m-%dT%H:%M:%S") for t in rule[:3]] == SCHEDULES[s["name"]], s["name"]


def test_the_scheduled_report_reads_the_shared_store_and_the_quarter_that_ended():
    (tpl,) = [t for t in TEMPLATES if t["name"] == "gpuops service report"]
    assert tpl["extra_vars"]["gpuops_db_url"].startswith("postgresql://")
    (sched,) = [s for s in DATA["awx_schedules"] if s.get("job_template") == "gpuops service report"]
    assert sched["extra_data"] == {"gpuops_period": "last-quarter"}


def test_replace_workflow_graph():
    (wf,) = [w for w in DATA["awx_workflows"] if "replace" in w["name"]]
    assert wf["allow_simultaneous"] is False
    nodes = {n["identifier"]: n for n in wf["nodes"]}
    assert len(nodes) == len(wf["nodes"])
    names = {t["name"] for t in TEMPLATES}
    for n in wf["nodes"]:
        assert ("job_template" in n) != ("approval" in n), n["identifier"]
        if "job_template" in n:
            assert n["job_template"] in names
        else:
            assert n["approval"]["name"] and n["approval"]["timeout"] > 0
        assert all(s in nodes for s in n["success"])
    # walk the chain from the root: an approval comes before every replace step
    children = {s for n in wf["nodes"] for s in n["success"]}
    (root,) = [i for i in nodes if i not in children]
    order, cur = [], root
    while cur:
        order.append(cur)
        cur = nodes[cur]["success"][0] if nodes[cur]["success"] else None
    assert len(order) == len(nodes)
    kinds = ["approval" if "approval" in nodes[i] else nodes[i]["job_template"] for i in order]
    assert kinds[0] == "gpuops inspect" and kinds[-1] == "gpuops inspect"
    for i, k in enumerate(kinds):
        if k == "gpuops replace":
            assert kinds[i - 1] == "approval"
    assert [
        nodes[i]["extra_data"].get("replace_phase") for i in order if kinds[order.index(i)] == "gpuops replace"
    ] == [
        "prepare",
        "return",
    ]
    survey = json.load(open(os.path.join(AWX, "surveys", wf["survey"]), encoding="utf-8"))
    assert "replace_phase" not in [q["variable"] for q in survey["spec"]]  # would override the nodes' phase


JINJA_DELIMS = ("{{", "{%", "{#")
HOSTILE = (
    "{{ lookup('pipe', 'touch %(m)s') }}",
    "{%% set _x = lookup('pipe', 'touch %(m)s') %%}",
    "{# c #}{{ lookup('pipe', 'touch %(m)s') }}",
)


def _strings(value, where):
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, "%s.%s" % (where, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, "%s[%d]" % (where, i))


def _job_data():
    """Everything AWX hands a job as extra vars: job template extra_vars, schedule and workflow node extra_data,
    survey defaults and choices."""
    yield from _strings([t.get("extra_vars") for t in TEMPLATES], "job_templates.extra_vars")
    yield from _strings([s.get("extra_data") for s in DATA["awx_schedules"]], "schedules.extra_data")
    for w in DATA["awx_workflows"]:
        yield from _strings([n.get("extra_data") for n in w["nodes"]], "%s.nodes.extra_data" % w["name"])
    for f in sorted(os.listdir(os.path.join(AWX, "surveys"))):
        spec = json.load(open(os.path.join(AWX, "surveys", f), encoding="utf-8"))
        for q in spec["spec"]:
            yield from _strings([q.get("default"), q.get("choices")], "%s:%s" % (f, q["variable"]))


def test_allow_jinja_in_extra_vars_is_never_and_applied():
    """The controller setting that decides whether survey answers are templates is part of the configuration."""
    assert DATA["awx_settings"]["ALLOW_JINJA_IN_EXTRA_VARS"] == "never"
    play = yaml.safe_load(open(os.path.join(ROOT, "playbooks", "awx_configure.yml"), encoding="utf-8"))
    tasks = [p for p in play if "tasks" in p][0]["tasks"]  # the first play with tasks: after the --limit guard
    (task,) = [t for t in tasks if "awx.awx.settings" in t]
    assert task["awx.awx.settings"] == {"settings": "{{ awx_settings }}"}
    assert tasks.index(task) == 0  # before any job template exists


def test_no_template_in_what_jobs_receive():
    """Under `never` no extra var is rendered, so none may need to be: a `{{ }}` here would either arrive as
    literal text or push an operator to ALLOW_JINJA_IN_EXTRA_VARS=always (every survey answer a template)."""
    found = [(where, text) for where, text in _job_data() if any(d in text for d in JINJA_DELIMS)]
    assert found == []


def test_identifier_questions_are_bounded_or_choices():
    """AWX surveys cannot check a pattern (ansible/awx#7666): identifiers get tight lengths, closed sets are
    multiplechoice; the playbooks validate identifiers with full matches."""
    for f in sorted(os.listdir(os.path.join(AWX, "surveys"))):
        for q in json.load(open(os.path.join(AWX, "surveys", f), encoding="utf-8"))["spec"]:
            var = q["variable"]
            if re.search(r"(_mode|_class|_part|_phase|_restart|_force)$", var):
                assert q["type"] == "multiplechoice" and q["choices"], (f, var)
            elif re.search(r"(ticket|change_id|_host|component)$", var):
                assert q["type"] == "text" and q["max"] <= 253, (f, var)


def _awx_extra_vars_file(path, values, setting):
    """The extra vars file AWX writes for a job (awx/main/utils/safe_yaml.py): under `template`/`never` every
    string that is not the job template's own saved value is tagged !unsafe; under `always` plain YAML."""

    class Unsafe(yaml.SafeDumper):
        def represent_data(self, data):
            if isinstance(data, str):
                return self.represent_scalar("!unsafe", data)
            return super().represent_data(data)

    dumper = yaml.SafeDumper if setting == "always" else Unsafe
    path.write_text("".join(yaml.dump({k: v}, Dumper=dumper, default_flow_style=False) for k, v in values.items()))


@pytest.mark.parametrize("setting", ["never", "always"])
def test_survey_answers_are_inert(tmp_path, setting):
    """Every survey's text answers carrying {{ }}, {% %} and {# #} with a pipe lookup, written as AWX writes them,
    then used in templates by a real ansible-playbook: under `never` nothing runs and the text comes back
    literally; under `always` (the setting the old workflow needed for `{{ replace_host }}`) the lookups run."""
    answers, markers = {}, []
    for f in sorted(os.listdir(os.path.join(AWX, "surveys"))):
        for q in json.load(open(os.path.join(AWX, "surveys", f), encoding="utf-8"))["spec"]:
            if q["type"] in ("text", "textarea", "password"):
                marker = tmp_path / ("m-%s-%d" % (q["variable"], len(markers) % len(HOSTILE)))
                markers.append(marker)
                answers[q["variable"]] = HOSTILE[len(markers) % len(HOSTILE)] % {"m": marker}
    assert len(answers) >= 10
    _awx_extra_vars_file(tmp_path / "extravars", answers, setting)
    use = tmp_path / "use.yml"
    use.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - ansible.builtin.copy:\n"
        "        dest: %s\n        content: \"{{ {%s} | to_json }}\"\n        mode: '0600'\n"
        % (tmp_path / "out.json", ", ".join("'%s': %s" % (k, k) for k in sorted(answers)))
    )
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local"]
        + ["-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "@%s" % (tmp_path / "extravars"), str(use)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    ran = [m.name for m in markers if m.exists()]
    if setting == "always":
        assert ran, proc.stdout[-2000:]
        return
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert ran == []
    assert json.loads((tmp_path / "out.json").read_text()) == answers


def _env():
    env = dict(
        os.environ, PATH=BIN + os.pathsep + os.environ["PATH"], ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build")
    )
    env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
    return env


def test_awx_configure_syntax_and_modules():
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "--syntax-check", "playbooks/awx_configure.yml"],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = open(os.path.join(ROOT, "playbooks", "awx_configure.yml"), encoding="utf-8").read()
    for module in (
        "organization",
        "project",
        "execution_environment",
        "job_template",
        "schedule",
        "workflow_job_template",
    ):
        assert "awx.awx.%s:" % module in text


def test_awx_configure_builds_workflow_nodes_offline():
    """Runs from the node-building task on; the next task's API call fails (no controller), as expected."""
    env = _env()
    env.update(ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", CONTROLLER_HOST="http://127.0.0.1:9")
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "playbooks/awx_configure.yml"]
        + ["--start-at-task", "Build the workflow nodes from awx/controller.yml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = json.loads(proc.stdout)
    play = [p for p in out["plays"] if not p["play"]["name"].startswith("A --limit keeps localhost")][0]
    tasks = {t["task"]["name"]: t["hosts"]["localhost"] for t in play["tasks"]}
    built = tasks["Build the workflow nodes from awx/controller.yml"]
    assert not built.get("failed")
    nodes = built["results"][-1]["ansible_facts"]["__awx_wf_nodes"]["gpuops replace (approved)"]
    by_id = {n["identifier"]: n for n in nodes}
    assert by_id["approve-replacement"]["unified_job_template"] == {
        "name": "Approve the replacement (CAB / on-call lead)",
        "timeout": 14400,
        "type": "workflow_approval",
    }
    assert by_id["prepare"]["unified_job_template"]["type"] == "job_template"
    assert by_id["prepare"]["related"]["success_nodes"] == [{"identifier": "technician-done"}]
    assert by_id["inspect-before"]["extra_data"] == {"gpuops_targets": "gpu_nodes"}
    failed = tasks["Workflows (with approval nodes)"]
    assert failed.get("failed") and "127.0.0.1:9" in json.dumps(failed)


def test_project_sync_requirements_match_the_execution_environment():
    """awx/collections/requirements.yml (docs/operations.md, AWX step 4) = gpuops.cluster + the EE's collections."""
    with open(os.path.join(AWX, "collections", "requirements.yml"), encoding="utf-8") as fh:
        reqs = {c["name"]: c.get("version") for c in yaml.safe_load(fh)["collections"]}
    with open(os.path.join(ROOT, "execution-environment.yml"), encoding="utf-8") as fh:
        ee = yaml.safe_load(fh)["dependencies"]["galaxy"]["collections"]
    want = {c["name"]: c.get("version") for c in ee if c.get("type") != "file"}
    assert reqs.pop("gpuops.cluster")
    assert reqs == want


def test_sliced_inspection_workflow():
    """docs/scale-out.md: open (names the run group) -> the sliced job template -> the merge, every 15 minutes; the
    slice count AWX cuts, the count each slice records and the count the merge needs are one number; the slices
    and the merge share one store."""
    (wf,) = [w for w in DATA["awx_workflows"] if w["name"] == "gpuops inspect (sliced)"]
    nodes = {n["identifier"]: n for n in wf["nodes"]}
    assert [nodes["open"]["success"], nodes["slices"]["success"], nodes["merge"]["success"]] == [
        ["slices"],
        ["merge"],
        [],
    ]
    by_name = {t["name"]: t for t in TEMPLATES}
    opener, sliced, merge = (by_name[nodes[i]["job_template"]] for i in ("open", "slices", "merge"))
    assert opener["playbook"] == "playbooks/slice_open.yml"
    assert sliced["extra_vars"]["gpuops_slice_mode"] == "slice" and merge["extra_vars"]["gpuops_slice_mode"] == "merge"
    assert "job_slice_count" not in merge and "job_slice_count" not in opener
    count = sliced["job_slice_count"]
    assert count > 1 and sliced["extra_vars"]["gpuops_slice_count"] == count
    assert nodes["merge"]["extra_data"]["gpuops_expect_slices"] == count
    assert sliced["extra_vars"]["gpuops_db_url"] == merge["extra_vars"]["gpuops_db_url"]
    (sched,) = [s for s in DATA["awx_schedules"] if s.get("workflow") == wf["name"]]
    assert "FREQ=MINUTELY;INTERVAL=15" in sched["rrule"]
    play = open(os.path.join(ROOT, "playbooks", "awx_configure.yml"), encoding="utf-8").read()
    assert 'job_slice_count: "{{ item.job_slice_count | default(1) }}"' in play
    assert 'unified_job_template: "{{ item.workflow }}"' in play
