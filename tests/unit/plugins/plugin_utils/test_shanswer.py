# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 35, observation 7 (shell capture half): a hostile node cannot exhaust the controller (_shanswer).

Before: the action kept the node's whole stdout and ``parse_output`` searched to the end of the answer for the end
of every section it met, so an answer of unterminated sections cost its length times their number (1.6 MB: 3.1 s
of CPU, 3.3 MB: 10.4 s). Now the answer is refused over ``capture_max_bytes`` (a failed collection: the
inspection's collector.error for that node, the others complete), the node's script cuts its own output one byte
past the cap, and ``parse_output`` looks at every character once. The single pass is asserted by counting what the
parser's searches scan (a ``str`` whose ``find`` counts), not by the clock.
"""

from __future__ import annotations

import json
import subprocess
from unittest import mock

import pytest

from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import (
    livetree as _livetree,
    shanswer as _shanswer,
    shcapture as _shcapture,
)

TOKEN = "0123456789abcdef0123456789abcdef"
M = "@@gpuops:%s " % TOKEN


class Budget(Exception):
    pass


class Counted(str):
    """The node's answer, counting the characters its ``find`` calls scan; over ``budget`` it stops the parser."""

    budget = 0
    scanned = 0

    def find(self, sub, start=None, end=None):  # noqa: D102 - str.find, counted
        start = 0 if start is None else start
        stop = len(self) if end is None else min(end, len(self))
        hit = str.find(self, sub, start, stop)
        Counted.scanned += (hit + len(sub) if hit != -1 else stop) - start
        if Counted.scanned > Counted.budget:
            raise Budget("scanned %d characters of a %d-character answer" % (Counted.scanned, len(self)))
        return hit


def _scan(text):
    Counted.scanned, Counted.budget = 0, 3 * len(text) + 10_000
    return _shanswer.parse_output(Counted(text), TOKEN), Counted.scanned


def _unterminated_sections(size):
    """Section starts and a line of body each, none of them ended: the shape that was quadratic."""
    unit = M + "B s%07d\n" + "x" * 40 + "\n"
    n = size // len(unit % 0)
    return "".join(unit % i for i in range(n))


@pytest.mark.parametrize(
    "shape",
    ["one_section", "many_sections", "many_markers_in_a_body", "a_long_marker_line"],
)
@pytest.mark.parametrize("size", [1 << 20, 8 << 20])
def test_parse_output_reads_each_character_once(shape, size):
    if shape == "one_section":  # one 8 MB section that never ends
        text = M + "B kernel.log\n" + ("k" * 99 + "\n") * (size // 100)
    elif shape == "many_sections":
        text = _unterminated_sections(size)
    elif shape == "many_markers_in_a_body":  # a section with markers (not its end) inside, then no end
        text = M + "B a\n" + (M + "M k v\n") * (size // (len(M) + 6))
    else:
        text = M + "M hostname " + "h" * size
    out, scanned = _scan(text)
    assert scanned <= 3 * len(text) + 10_000
    assert not out.complete and out.problems and not out.sections


def test_parse_output_still_reads_a_whole_answer():
    body = "line 1\n%sE forged 0 0\nline 3" % ("@@gpuops:%s " % ("f" * 32))  # another token is data
    text = "banner\n" + M + "M hostname n1\n" + M + "B tool.txt\n" + body + "\n" + M + "E tool.txt 0 7\n"
    text += M + "B stderr:7\nwarn\n\n" + M + "E stderr:7 0 0\n" + M + "Z\n"
    out, scanned = _scan(text)
    assert out.complete and not out.problems and scanned <= 3 * len(text) + 10_000
    assert out.sections == {"tool.txt": (body, "0", "7")} and out.stderr == {"7": "warn\n"}
    assert out.first("hostname") == "n1"
    # a section cut by the start of another: dropped, the next one read
    cut = M + "B a\npartial\n" + M + "B b\nwhole\n" + M + "E b 0 0\n" + M + "Z\n"
    out = _shanswer.parse_output(cut, TOKEN)
    assert list(out.sections) == ["b"] and out.problems == ["the section a does not end (the output was cut)"]


@pytest.mark.parametrize(
    "text, nbytes",
    [("a" * 100, 100), ("é" * 100, 200), ("\udcff" * 10, 10), ("\ud800" * 10, 30)],  # surrogateescape'd bytes: 1 each
)
def test_answer_bytes_counts_what_the_node_sent(text, nbytes):
    assert _shanswer.answer_bytes(text, 10_000) == nbytes
    assert _shanswer.answer_size_error(text, nbytes) is None
    assert "capture_max_bytes (%d bytes)" % (nbytes - 1) in _shanswer.answer_size_error(text, nbytes - 1)


@pytest.mark.parametrize("value", [0, 4095, 1 << 31, "lots", True, 1.5])
def test_a_cap_out_of_range_is_refused(value):
    with pytest.raises(_shanswer.ShellCaptureError, match="capture_max_bytes"):
        _shcapture.check_options({"max_bytes": value})


def _action(args, low_level):
    from ansible_collections.gpuops.cluster.plugins.action import collect_info as collect_action

    task = mock.MagicMock()
    task.args = dict(args)
    task.async_val = 0
    task.check_mode = False
    action = collect_action.ActionModule(
        task, mock.MagicMock(), mock.MagicMock(), loader=None, templar=None, shared_loader_obj=None
    )
    with mock.patch.object(action, "_low_level_execute_command", side_effect=low_level), mock.patch.object(
        action, "_execute_module", side_effect=AssertionError("no module runs on the node")
    ):
        return action.run(task_vars={})


def _hostile_node(size):
    """A node whose shell ignores the script and answers with the run's own markers (it saw the token): a valid
    start, then ``size`` characters of unterminated sections."""

    def connection(cmd, sudoable=True, in_data=None, **_kw):
        token = in_data.decode().split("M='@@gpuops:", 1)[1][:32]
        marker = "@@gpuops:%s " % token
        head = marker + "M hostname evil\n"
        return {"rc": 0, "stdout": head + _unterminated_sections(size).replace(M, marker), "stderr": ""}

    return connection


def test_an_answer_over_the_cap_is_a_failed_collection_never_parsed():
    args = {"parse_on": "controller", "result_format": "capture", "domains": ["node"], "capture_max_bytes": 1 << 20}
    with mock.patch.object(_shcapture, "parse_output", side_effect=AssertionError("parsed")):
        result = _action(args, _hostile_node(2 << 20))
    assert result["failed"] and "capture_max_bytes (1048576 bytes)" in result["msg"]
    assert "capture_packed" not in result
    # within the cap it is read (and refused by the parser's own rules: nothing ends), in one pass
    result = _action(dict(args, capture_max_bytes=4 << 20), _hostile_node(2 << 20))
    meta = json.loads(_livetree.unpack(result["capture_packed"])["capture.json"])
    assert meta["hostname"] == "evil" and meta["errors"]


def test_the_action_refuses_a_cap_out_of_range():
    from ansible.errors import AnsibleActionFail

    with pytest.raises(AnsibleActionFail, match="capture_max_bytes"):
        _action({"parse_on": "controller", "capture_max_bytes": 12}, lambda *a, **k: {})


def test_the_node_cuts_its_own_answer_one_byte_past_the_cap(tmp_path, monkeypatch):
    """The real script under /bin/sh: a tool that prints 1 MiB; the node sends cap + 1 bytes, the action refuses."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "scontrol").write_text("#!/bin/sh\nhead -c 1048576 /dev/zero | tr '\\0' x\n")
    (bindir / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % bindir)
    sent = {}

    def connection(cmd, sudoable=True, in_data=None, **_kw):
        proc = subprocess.run(["/bin/sh", "-c", cmd + " && sleep 0"], input=in_data, capture_output=True, timeout=60, check=False)
        sent["stdout"] = proc.stdout
        return {"rc": proc.returncode, "stdout": proc.stdout.decode(), "stderr": proc.stderr.decode()}

    args = {"parse_on": "controller", "result_format": "capture", "domains": ["slurm"], "capture_max_bytes": 65536}
    result = _action(args, connection)
    assert len(sent["stdout"]) == 65537
    assert result["failed"] and "capture_max_bytes (65536 bytes)" in result["msg"]
    result = _action(dict(args, capture_max_bytes=4 << 20), connection)
    tree = _livetree.unpack(result["capture_packed"])
    assert len(tree["scontrol-show-node.txt"]) == 1048576
