"""gpuops.cluster.oneline: which failed results are the collection's intended failures, and the line printed.

The real output (a refusal through the real callback, a crash left alone) is tests/integration/test_refusal_output.py;
here the decision, with stand-in tasks and the shape ansible-core 2.19 gives a returned failure ("Task failed."
caused by "Action failed.") and a raised exception ("Task failed." caused by the exception's own message)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpuops.cluster.plugins.callback import oneline as O

ROOT = O._ROOT
IN_COLLECTION = os.path.join(ROOT, "playbooks", "limit_guard.yml")
OUTSIDE = "/srv/site/my-playbook.yml"


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Task:
    def __init__(self, action, path, name="a task"):
        self.action = self.resolved_action = action
        self._path = path
        self.name = name

    def get_path(self):
        return "%s:%d" % (self._path, 37) if self._path else ""


def _summary(cause_msg):
    """ErrorSummary-shaped: event "Task failed." whose chain's event is ``cause_msg``."""
    return Obj(event=Obj(msg="Task failed.", chain=Obj(event=Obj(msg=cause_msg, chain=None))))


RETURNED = _summary("Action failed.")
RAISED = _summary("'no such key'")
MSG = {"failed": True, "msg": "isolate refused before any change", "exception": "x"}


@pytest.mark.parametrize(
    "action", ["ansible.builtin.fail", "fail", "ansible.builtin.assert", "gpuops.cluster.start_checks"]
)
def test_a_returned_failure_of_the_collections_own_task_is_intended(action):
    assert O.intended_failure(Task(action, IN_COLLECTION), dict(MSG), RETURNED)


@pytest.mark.parametrize(
    "task, result, exc",
    [
        (Task("gpuops.cluster.start_checks", IN_COLLECTION), MSG, RAISED),  # a crash in the collection's action
        (Task("ansible.builtin.fail", IN_COLLECTION), MSG, RAISED),  # the message's template raised
        (Task("ansible.builtin.fail", OUTSIDE), MSG, RETURNED),  # the operator's own playbook
        (Task("gpuops.cluster.start_checks", OUTSIDE), MSG, RETURNED),
        (Task("ansible.builtin.command", IN_COLLECTION), MSG, RETURNED),  # not a refusal action
        (Task("gpuops.cluster.gpu_info", IN_COLLECTION), dict(MSG, module_stderr="Traceback ..."), RETURNED),
        (Task("ansible.builtin.fail", IN_COLLECTION), dict(MSG, results=[{"failed": True}]), RETURNED),  # a loop
        (Task("ansible.builtin.fail", IN_COLLECTION), {"failed": True, "msg": "  "}, RETURNED),  # nothing to say
        (Task("ansible.builtin.fail", IN_COLLECTION), {"failed": True, "msg": ["a", "b"]}, RETURNED),
        (Task("ansible.builtin.fail", ""), MSG, RETURNED),  # no source file (ad hoc)
        (Task("ansible.builtin.fail", ROOT + "-other/playbooks/x.yml"), MSG, RETURNED),  # a sibling dir, not ours
    ],
    ids=["crash", "template-raised", "own-fail", "own-action", "command", "module-crash", "loop", "blank", "list",
         "adhoc", "sibling"],
)  # fmt: skip
def test_everything_else_keeps_the_default_output(task, result, exc):
    assert not O.intended_failure(task, dict(result), exc)


def test_without_an_error_summary_a_traceback_string_is_a_crash():
    """Before 2.19 a crash put its traceback in the result's `exception`; a returned failure had none."""
    task = Task("gpuops.cluster.start_checks", IN_COLLECTION)
    assert O.intended_failure(task, {"failed": True, "msg": "refused"}, None)
    assert not O.intended_failure(task, {"failed": True, "msg": "boom", "exception": "Traceback ..."}, None)


def test_the_collection_is_found_through_a_symlinked_install(tmp_path):
    link = tmp_path / "ansible_collections" / "gpuops" / "cluster"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT)
    task = Task("ansible.builtin.fail", str(link / "playbooks" / "inspect.yml"))
    assert O.intended_failure(task, dict(MSG), RETURNED)


@pytest.mark.parametrize(
    "name, msg, expect",
    [
        ("Before any change ...", "start_checks: isolate refused before\n  any change", "REFUSED [h1]: start_checks: "
         "isolate refused before any change"),
        ("Refuse a --limit that leaves out localhost", "--limit x leaves out localhost", "REFUSED [h1]: --limit x "
         "leaves out localhost"),
        ("Fail on findings at or above gpuops_fail_on", "gpuops_fail_on=P1: 3 finding(s) at or above P1",
         "FAILED [h1]: gpuops_fail_on=P1: 3 finding(s) at or above P1"),
    ],
)  # fmt: skip
def test_one_line(name, msg, expect):
    line = O.one_line("h1", name, msg)
    assert line == expect and "\n" not in line
