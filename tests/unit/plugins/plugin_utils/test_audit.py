"""Hash-chained audit log: append, verify, tamper detection, concurrency, crash safety, redaction."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import audit as A


def _write(tmp_path, n=5, run_id="r1"):
    log = str(tmp_path / "audit" / "audit.log")
    head = None
    for i in range(n):
        head = A.append(log, {"event": "task", "i": i, "run_id": run_id})
    return log, str(tmp_path / "audit" / "head.json"), head


def _lines(log):
    with open(log, "rb") as f:
        return f.read().splitlines(keepends=True)


def _put(log, lines):
    with open(log, "wb") as f:
        f.write(b"".join(lines))


def test_chain_and_head(tmp_path):
    log, head_path, head = _write(tmp_path, 5)
    lines = _lines(log)
    assert len(lines) == 5
    recs = [json.loads(x) for x in lines]
    assert recs[0]["prev"] == A.GENESIS
    assert [r["seq"] for r in recs] == [1, 2, 3, 4, 5]
    for a, b in zip(lines, recs[1:]):
        assert b["prev"] == A.line_hash(a)
    assert head["hash"] == A.line_hash(lines[-1]) and head["seq"] == 5
    with open(head_path) as f:
        assert json.load(f)["hash"] == head["hash"]
    res = A.verify(log, head_path)
    assert res["ok"] and res["records"] == 5 and res["last_seq"] == 5 and res["runs"] == ["r1"]
    assert A.verify(log, head["hash"])["ok"]
    assert A.verify(log, chain_only=True)["ok"]  # chain only
    assert oct(os.stat(log).st_mode & 0o777) == "0o600"


def test_chain_spans_runs(tmp_path):
    log, head_path, _unused = _write(tmp_path, 3, "r1")
    A.append(log, {"event": "run_start", "run_id": "r2"})
    res = A.verify(log, head_path)
    assert res["ok"] and res["records"] == 4 and res["runs"] == ["r1", "r2"]


def test_edit_of_a_middle_line_is_detected(tmp_path):
    log, head_path, _unused = _write(tmp_path, 6)
    lines = _lines(log)
    rec = json.loads(lines[2])
    rec["i"] = 999  # still valid JSON, seq intact
    lines[2] = A.dumps(rec).encode() + b"\n"
    _put(log, lines)
    res = A.verify(log, head_path)
    assert not res["ok"]
    assert res["first_bad_line"] == 3 and res["first_bad_seq"] == 3
    assert "modified" in res["reason"]


def test_edit_of_the_last_line_is_detected_by_the_head(tmp_path):
    log, head_path, _unused = _write(tmp_path, 4)
    lines = _lines(log)
    lines[-1] = lines[-1].replace(b'"i":3', b'"i":7')
    _put(log, lines)
    assert A.verify(log, chain_only=True)["ok"]  # without the head an edit of the last line is invisible ...
    res = A.verify(log, head_path)  # ... with it, it is not
    assert not res["ok"] and res["first_bad_line"] == 4 and "does not match the expected head" in res["reason"]


def test_deleting_a_middle_line_is_detected(tmp_path):
    log, head_path, _unused = _write(tmp_path, 6)
    lines = _lines(log)
    del lines[3]
    _put(log, lines)
    res = A.verify(log, head_path)
    assert not res["ok"]
    assert res["first_bad_line"] == 4 and res["first_bad_seq"] == 4
    assert "seq 4..4 missing" in res["reason"]


def test_deleting_the_first_line_is_detected(tmp_path):
    log, head_path, _unused = _write(tmp_path, 3)
    _put(log, _lines(log)[1:])
    res = A.verify(log, head_path)
    assert not res["ok"] and res["first_bad_line"] == 1


def test_truncating_the_last_line_is_detected(tmp_path):
    log, head_path, _unused = _write(tmp_path, 5)
    lines = _lines(log)
    _put(log, lines[:-1])  # the last record removed entirely: the chain itself is fine ...
    assert A.verify(log, chain_only=True)["ok"]
    res = A.verify(log, head_path)  # ... but it no longer ends at the head
    assert not res["ok"] and res["first_bad_seq"] == 5 and "removed or truncated" in res["reason"]
    _put(log, lines[:-1] + [lines[-1][:40]])  # cut in the middle of the last line
    res = A.verify(log, head_path)
    assert not res["ok"] and res["first_bad_line"] == 5 and "torn" in res["reason"]


def test_reordered_and_inserted_lines(tmp_path):
    log, head_path, _unused = _write(tmp_path, 4)
    lines = _lines(log)
    _put(log, [lines[0], lines[2], lines[1], lines[3]])
    assert not A.verify(log, head_path)["ok"]
    _put(log, lines[:2] + [lines[1]] + lines[2:])
    res = A.verify(log, head_path)
    assert not res["ok"] and res["first_bad_line"] == 3 and "inserted or reordered" in res["reason"]


@pytest.mark.parametrize("garbage", [b"not json\n", b"[1,2]\n", b'{"seq": "x"}\n', b"\xff\xfe\n", b"\n"])
def test_garbage_lines(tmp_path, garbage):
    log, head_path, _unused = _write(tmp_path, 3)
    lines = _lines(log)
    _put(log, lines[:1] + [garbage] + lines[1:])
    res = A.verify(log, head_path)
    assert not res["ok"] and res["first_bad_line"] == 2


def test_missing_log_empty_log_and_bad_head(tmp_path):
    res = A.verify(str(tmp_path / "nope.log"), {"hash": "a" * 64, "seq": 9})
    assert not res["ok"] and "cannot read" in res["reason"] and "9 record" in res["reason"]
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert A.verify(str(empty), chain_only=True)["ok"]
    assert not A.verify(str(empty), "b" * 64)["ok"]  # the head says there were records
    bad_head = tmp_path / "head.json"
    bad_head.write_text("[]")
    assert "expected head" in A.verify(str(empty), str(bad_head))["reason"]


def test_crash_mid_write_leaves_a_valid_prefix_and_later_appends_chain_on(tmp_path):
    log, head_path, _unused = _write(tmp_path, 3)
    with open(log, "ab") as f:
        f.write(b'{"event":"task","i":3,"prev":"abc')  # a torn write, no newline, head.json not updated
    res = A.verify(log, head_path)
    assert not res["ok"] and res["first_bad_line"] == 4 and res["records"] == 0
    A.append(log, {"event": "run_start", "run_id": "r2"})
    lines = _lines(log)
    assert len(lines) == 5 and lines[3].endswith(b"\n")  # the torn line is kept, visibly
    assert json.loads(lines[4])["prev"] == A.line_hash(lines[3])
    res = A.verify(log, head_path)
    assert res["first_bad_line"] == 4 and "not a JSON record" in res["reason"]
    # the three records before the crash are a valid prefix
    _put(log, lines[:3])
    assert A.verify(log, chain_only=True)["ok"]


def _proc_writer(log, wid, n):
    for i in range(n):
        A.append(log, {"event": "task", "writer": wid, "i": i, "run_id": "p%d" % wid}, fsync=False)


def test_concurrent_processes_keep_one_valid_chain(tmp_path):
    log = str(tmp_path / "audit" / "audit.log")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_proc_writer, args=(log, w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    res = A.verify(log, str(tmp_path / "audit" / "head.json"))
    assert res["ok"], res
    assert res["records"] == 160
    assert sorted(res["runs"]) == ["p0", "p1", "p2", "p3"]


def test_concurrent_threads_keep_one_valid_chain(tmp_path):
    log = str(tmp_path / "audit.log")
    threads = [threading.Thread(target=_proc_writer, args=(log, w, 30)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    res = A.verify(log, str(tmp_path / "head.json"))
    assert res["ok"] and res["records"] == 120


def test_long_last_line_is_read_back(tmp_path):
    log = str(tmp_path / "audit.log")
    A.append(log, {"event": "big", "blob": "x" * 200000})
    A.append(log, {"event": "after"})
    assert A.verify(log, str(tmp_path / "head.json"))["ok"]


def test_diff_summary_keeps_keys_not_values():
    s = A.diff_summary(
        {
            "before": {"user": "admin", "password": "old-Secret-1", "mode": "0600"},
            "after": {"user": "admin", "password": "new-Secret-2", "token": "t0k3n-value"},
        }
    )
    text = json.dumps(s)
    assert s == {"items": [{"added": ["token"], "removed": ["mode"], "changed": ["password"]}]}
    assert "Secret" not in text and "t0k3n" not in text
    s = A.diff_summary(
        [{"before": "a\nb\n", "after": "a\nb\nc\n", "before_header": "/etc/x", "after_header": "/etc/x"}]
    )
    assert s["items"][0]["before_lines"] == 2 and s["items"][0]["after_lines"] == 3
    assert A.diff_summary(None) is None and A.diff_summary({}) is None and A.diff_summary(["junk"]) is None


def test_secret_values_and_scrub():
    found = A.secret_values(
        {"bmc_password": "Sup3rS3cret", "gpuops_ticket": "OPS-1", "nested": [{"api_token": "abcd1234"}], "x": True}
    )
    assert sorted(found) == ["Sup3rS3cret", "abcd1234"]
    assert A.scrub("login failed for Sup3rS3cret at abcd1234", found) == "login failed for ******** at ********"
    assert A.scrub("abc", ["ab"]) == "abc"  # too short to scrub safely


def test_state_dir_and_default_log(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUOPS_STATE_DIR", str(tmp_path / "st"))
    monkeypatch.delenv("GPUOPS_AUDIT_LOG", raising=False)
    assert A.state_dir() == str(tmp_path / "st")
    assert A.default_log_path() == str(tmp_path / "st" / "audit" / "audit.log")
    monkeypatch.delenv("GPUOPS_STATE_DIR")
    assert A.state_dir().endswith(os.path.join(".local", "state", "gpuops")) or A.state_dir().endswith("state")


@seed(20261202)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_fuzz_verify_never_raises(tmp_path, data):
    log = tmp_path / "fuzz.log"
    log.write_bytes(data)
    res = A.verify(str(log), {"hash": "c" * 64, "seq": 2})
    assert isinstance(res["ok"], bool)
    A.append(str(log), {"event": "after-fuzz"}, head_path=str(tmp_path / "h.json"))


# ------------------------------------------------------------------ issue 12 item 9: verification fails closed
def test_truncation_plus_a_deleted_head_does_not_verify(tmp_path):
    log, head_path, _head = _write(tmp_path, 5)
    _put(log, _lines(log)[:2])
    os.unlink(head_path)
    res = A.verify(log, head_path)
    assert not res["ok"] and "head file" in res["reason"] and "missing" in res["reason"]
    res = A.verify(log)
    assert not res["ok"] and "no head" in res["reason"] and res["head_checked"] is False
    # only an explicit chain-only check passes, and says so (the CLI: tests/unit/tools/test_gpuops_audit.py)
    out = A.verify(log, head_path, chain_only=True)
    assert out["ok"] is True and out["chain_only"] is True and out["head_checked"] is False


def test_anchor_catches_a_log_and_head_rewritten_together(tmp_path):
    log, head_path, head = _write(tmp_path, 5)
    anchor = "%d:%s" % (head["seq"], head["hash"])
    res = A.verify(log, head_path, anchor=anchor)
    assert res["ok"] and res["anchor_checked"] is True and res["head_checked"] is True
    # an older anchor (a syslog line of an earlier run) still checks that its record is there
    assert A.verify(log, head_path, anchor={"seq": 3, "hash": A.line_hash(_lines(log)[2])})["ok"]
    # an attacker removes records and rebuilds log + head.json into a fresh consistent chain
    os.unlink(log)
    _write(tmp_path, 3)
    assert A.verify(log, head_path)["ok"]  # the local head alone cannot tell
    res = A.verify(log, head_path, anchor=anchor)
    assert not res["ok"] and "anchor says seq 5" in res["reason"]
    os.unlink(log)
    _write(tmp_path, 6, run_id="forged")
    res = A.verify(log, head_path, anchor=json.dumps(head))  # the head JSON line as syslog got it
    assert not res["ok"] and res["first_bad_seq"] == 5 and "anchored head" in res["reason"]
    res = A.verify(log, head_path, anchor=anchor)
    assert not res["ok"] and res["first_bad_seq"] == 5
    for bad in ("5:xyz", "nope", {"seq": 0, "hash": "a" * 64}, {"seq": 1}):
        res = A.verify(log, head_path, anchor=bad)
        assert not res["ok"] and "anchor" in res["reason"]


def test_audit_files_are_private_whatever_the_umask_and_never_written_through_a_link(tmp_path):
    old = os.umask(0o022)
    try:
        log, head_path, _head = _write(tmp_path / "st", 2)
    finally:
        os.umask(old)
    assert oct(os.stat(log).st_mode & 0o777) == oct(0o600)
    assert oct(os.stat(head_path).st_mode & 0o777) == oct(0o600)
    assert oct(os.stat(os.path.dirname(log)).st_mode & 0o777) == oct(0o700)
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep\n")
    link = tmp_path / "st" / "audit" / "linked.log"
    link.symlink_to(target)
    with pytest.raises(OSError):
        A.append(str(link), {"event": "x"})
    assert target.read_text() == "keep\n"


def test_anchor_forms(tmp_path):
    log, _head_path, head = _write(tmp_path, 3)
    want = {"seq": 3, "hash": head["hash"]}
    line = "Dec  5 02:31:07 ops1 python3[4242]: gpuops-audit-head run_id=0c6e seq=3 hash=%s log=%s" % (
        head["hash"],
        log,
    )
    f = tmp_path / "anchor.json"
    f.write_text(json.dumps(head))
    for form in ("3:%s" % head["hash"], line, json.dumps(head), str(f), head):
        assert A.read_anchor(form) == want, form
    assert A.read_anchor(None) is None
