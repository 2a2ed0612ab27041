# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tamper-evident audit log: a hash chain of JSON lines, appended under a lock, verified offline.

Every record is one JSON object on one line (keys sorted, compact). ``prev`` is the sha256 (hex) of the
previous line's bytes (without its newline; ``GENESIS`` for the first line) and ``seq`` counts records
from 1 across all runs. After every append the new head ``{hash, seq, run_id, ...}`` is written atomically
to ``head.json`` beside the log (or any path given), so deleting or truncating the last record(s) shows
as a head mismatch. Format and threat model: docs/audit.md.

Verification fails closed: without a head to check the end of the log against (head.json deleted, say) the
result is *not ok*, unless the caller explicitly asks for a chain-only check (``chain_only=True``,
``--chain-only``). An *anchor* (a head copied off the controller: syslog, a remote append-only file) is a
record the log must still contain at its ``seq``.

Verification without Ansible: the operator CLI ``python -m gpuops_audit verify LOG`` (tools/gpuops_audit,
docs/audit.md) imports this module from the collections path; in a play, ``gpuops.cluster.audit_verify``.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._files import (
    ensure_private_dir,
    open_private,
    write_private_atomic,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso
from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson

GENESIS = "0" * 64
#: Keys whose values are never logged (diff summaries keep the key names only anyway).
SECRET_KEY = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|api_?key|private_?key|credential|auth|(^|_)pw($|_)|(^|_)pin($|_))", re.I
)
_TAIL_CHUNK = 64 * 1024
#: A longer line is not a record (protects verify() and the tail reader from garbage).
MAX_LINE = 1024 * 1024


def line_hash(line: Any) -> str:
    """sha256 hex of one log line (str or bytes, without the trailing newline)."""
    if isinstance(line, str):
        line = line.encode("utf-8")
    return hashlib.sha256(line.rstrip(b"\n")).hexdigest()


def dumps(record: Dict[str, Any]) -> str:
    """The canonical one-line JSON form of a record."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def utcnow() -> str:
    """A record's ``time``: now in UTC with microseconds (``_timeutil.utcnow_iso``)."""
    return utcnow_iso(timespec="microseconds")


def state_dir(explicit: Optional[str] = None) -> str:
    """The gpuops state directory: ``explicit``, ``$GPUOPS_STATE_DIR``, ``~/.local/state/gpuops`` or ``./state``."""
    d = explicit or os.environ.get("GPUOPS_STATE_DIR")
    if d:
        return os.path.abspath(os.path.expanduser(d))
    home = os.path.expanduser("~")
    if home and home != "~" and os.path.isdir(home) and os.access(home, os.W_OK):
        return os.path.join(home, ".local", "state", "gpuops")
    return os.path.abspath("state")


def default_log_path(state: Optional[str] = None) -> str:
    """``$GPUOPS_AUDIT_LOG`` or ``<state_dir>/audit/audit.log``."""
    return os.environ.get("GPUOPS_AUDIT_LOG") or os.path.join(state_dir(state), "audit", "audit.log")


def default_head_path(log_path: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(log_path)), "head.json")


def _read_last_line(fd: int) -> bytes:
    """The last line of the open file (without newline); b'' for an empty file. A torn (unterminated) last
    line is returned as it is: the next record chains to it and verify() reports it."""
    pos = os.lseek(fd, 0, os.SEEK_END)
    buf = b""
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        buf = os.pread(fd, step, pos) + buf  # buf always ends at the end of the file
        body = buf[:-1] if buf.endswith(b"\n") else buf
        nl = body.rfind(b"\n")
        if nl >= 0:
            return body[nl + 1 :]
        if pos == 0 or len(buf) > MAX_LINE:
            return body
    return b""


def write_head(head_path: str, head: Dict[str, Any]) -> None:
    """Write head.json atomically and privately (0600, temp file + fsync + rename, never through a link)."""
    write_private_atomic(os.path.abspath(head_path), json.dumps(head, sort_keys=True, indent=1) + "\n")


def append(
    log_path: str, record: Dict[str, Any], head_path: Optional[str] = None, fsync: bool = True
) -> Dict[str, Any]:
    """Append one record to the chain; return the new head ``{hash, seq, run_id, time, log}``.

    Under an exclusive flock on the log: read the current last line, set ``prev``/``seq``, write the line
    (one write of the whole line, O_APPEND), fsync, then update head.json. Concurrent writers (threads or
    processes, several ansible-playbook runs) serialize on the lock and extend one chain.
    """
    head_path = head_path or default_head_path(log_path)
    # 0600 in a 0700 directory whatever the umask; a link planted at the log's path is refused (O_NOFOLLOW)
    ensure_private_dir(os.path.dirname(os.path.abspath(log_path)))
    fd = open_private(log_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            last = _read_last_line(fd)
            seq = 1
            if last:
                try:
                    seq = int(_safejson.loads(last, what="the last audit line").get("seq", 0)) + 1
                except (ValueError, AttributeError, TypeError, UnicodeDecodeError):
                    seq = 0  # the previous line is damaged: verify() will say where
            rec = dict(record)
            rec["prev"] = line_hash(last) if last else GENESIS
            rec["seq"] = seq
            rec.setdefault("time", utcnow())
            data = dumps(rec).encode("utf-8")
            size = os.lseek(fd, 0, os.SEEK_END)
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # a torn line from a crash stays visible, the new record starts clean
            data += b"\n"
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
            if fsync:
                os.fsync(fd)
            head = {
                "hash": line_hash(data.lstrip(b"\n")),
                "seq": seq,
                "run_id": rec.get("run_id"),
                "time": rec["time"],
                "log": os.path.abspath(log_path),
            }
            write_head(head_path, head)
            return head
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_head(head: Any) -> Dict[str, Any]:
    """Normalize an expected head: a hash string, a dict, or a path to head.json."""
    if head is None:
        return {}
    if isinstance(head, dict):
        return head
    if isinstance(head, str):
        s = head.strip()
        if re.fullmatch(r"[0-9a-f]{64}", s):
            return {"hash": s}
        if not os.path.exists(s):
            raise ValueError(f"the head file {s} is missing (deleted?): the end of the log cannot be checked")
        with open(s, "rb") as f:
            data = _safejson.loads(f.read(), what="the head file")
        if not isinstance(data, dict) or not isinstance(data.get("hash"), str):
            raise ValueError(f"{s}: not a head file (no 'hash')")
        return data
    raise ValueError(f"expected head must be a sha256 hex string, a dict or a path, got {head!r}")


def read_anchor(anchor: Any) -> Optional[Dict[str, Any]]:
    """Normalize an anchor (a head kept off the controller): ``{seq, hash}``, ``"SEQ:HASH"``, the callback's
    syslog line (``gpuops-audit-head run_id=... seq=N hash=H log=...``), a head JSON object
    (``{"hash": ..., "seq": ...}``) or a path to a file holding one. None when not given."""
    if anchor is None or anchor == "":
        return None
    data: Any = anchor
    if isinstance(anchor, str):
        s = anchor.strip()
        m = re.fullmatch(r"(\d+):([0-9a-f]{64})", s) or re.search(r"\bseq=(\d+) hash=([0-9a-f]{64})\b", s)
        if m:  # SEQ:HASH, or the callback's syslog line "gpuops-audit-head run_id=... seq=N hash=H log=..."
            return {"seq": int(m.group(1)), "hash": m.group(2)}
        if s.startswith("{"):
            data = _safejson.loads(s, what="the anchor")
        elif os.path.exists(s):
            with open(s, "rb") as f:
                data = _safejson.loads(f.read(), what="the anchor file")
        else:
            raise ValueError(f"anchor {s!r} is neither SEQ:HASH, a head JSON object nor an existing file")
    if not isinstance(data, dict):
        raise ValueError("an anchor must be a head object with seq and hash")
    seq, h = data.get("seq"), data.get("hash")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise ValueError(f"anchor without a valid seq: {seq!r}")
    if not isinstance(h, str) or not re.fullmatch(r"[0-9a-f]{64}", h):
        raise ValueError(f"anchor without a valid sha256 hash: {h!r}")
    return {"seq": seq, "hash": h}


def _lines(path: str) -> Iterable[bytes]:
    with open(path, "rb") as f:
        yield from f


class _Broken(Exception):
    """Verification stops: ``line`` and ``seq`` of the first bad record (None when the log is unreadable)."""

    def __init__(self, reason: str, line: Optional[int] = None, seq: Any = None, bad_line: bool = True) -> None:
        super().__init__(reason)
        self.reason, self.line, self.seq, self.bad_line = reason, line, seq, bad_line


def _expected_head(expected_head: Any, chain_only: bool) -> Dict[str, Any]:
    """The head the log must end at ({} for a chain-only check); fails closed without one."""
    if chain_only:
        return {}
    if expected_head is None or expected_head == "":
        raise _Broken(
            "no head to check the end of the log against (head.json missing?): removed or truncated last "
            "records would go unseen; give the head (or an anchored copy), or ask for a chain-only check",
            bad_line=False,
        )
    try:
        expected = read_head(expected_head)
    except (OSError, ValueError) as e:
        raise _Broken(f"cannot read the expected head: {e}", bad_line=False) from None
    if not isinstance(expected.get("hash"), str):
        raise _Broken("cannot read the expected head: no 'hash'", bad_line=False)
    return expected


def _parse_line(raw: bytes, lineno: int) -> Tuple[bytes, Dict[str, Any], int]:
    """One log line as (body, record, seq); raises _Broken for a torn, oversized or malformed line."""
    if not raw.endswith(b"\n"):
        raise _Broken(f"line {lineno} is torn (no newline): a write was interrupted or the file cut", lineno)
    body = raw[:-1]
    if len(body) > MAX_LINE:
        raise _Broken(f"line {lineno} is longer than {MAX_LINE} bytes", lineno)
    try:
        rec = _safejson.loads(body, what="an audit line")
    except (ValueError, UnicodeDecodeError):
        raise _Broken(f"line {lineno} is not a JSON record", lineno) from None
    if not isinstance(rec, dict):
        raise _Broken(f"line {lineno} is not a JSON object", lineno)
    seq = rec.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise _Broken(f"line {lineno} has no sequence number", lineno)
    return body, rec, seq


def _check_link(rec: Dict[str, Any], seq: int, lineno: int, prev_seq: int, prev_hash: str) -> None:
    """The record continues the chain: the next seq, and ``prev`` is the previous line's hash."""
    if seq > prev_seq + 1:
        raise _Broken(
            f"record(s) seq {prev_seq + 1}..{seq - 1} missing before line {lineno} (deleted)", lineno, prev_seq + 1
        )
    if seq != prev_seq + 1:
        raise _Broken(f"line {lineno} has seq {seq} after seq {prev_seq} (inserted or reordered)", lineno)
    if rec.get("prev") != prev_hash:
        if lineno == 1:
            raise _Broken("line 1 does not start the chain (earlier records removed?)", 1, seq)
        raise _Broken(
            f"line {lineno - 1} (seq {prev_seq}) was modified: line {lineno}'s prev no longer matches it",
            lineno - 1,
            prev_seq,
        )


def _walk(log_path: str, anc: Optional[Dict[str, Any]], res: Dict[str, Any]) -> Tuple[int, str, int, List[str]]:
    """Follow the chain from GENESIS; returns (lines, last hash, last seq, run ids) and sets ``anchor_checked``."""
    prev_hash, prev_seq, lineno = GENESIS, 0, 0
    runs: List[str] = []
    for raw in _lines(log_path):
        lineno += 1
        body, rec, seq = _parse_line(raw, lineno)
        _check_link(rec, seq, lineno, prev_seq, prev_hash)
        prev_hash, prev_seq = line_hash(body), seq
        if anc is not None and seq == anc["seq"]:
            if prev_hash != anc["hash"]:
                raise _Broken(
                    f"line {lineno} (seq {seq}) does not match the anchored head: the log was rewritten", lineno, seq
                )
            res["anchor_checked"] = True
        rid = rec.get("run_id")
        if isinstance(rid, str) and (not runs or runs[-1] != rid) and rid not in runs:
            runs.append(rid)
    return lineno, prev_hash, prev_seq, runs


def _check_end(res: Dict[str, Any], anc: Optional[Dict[str, Any]], expected: Dict[str, Any]) -> None:
    """The log still reaches the anchor and ends at the expected head."""
    lineno, prev_seq = res["records"], res["last_seq"] or 0
    if anc is not None and res["anchor_checked"] is None:
        raise _Broken(
            f"the log ends at seq {prev_seq} but the anchor says seq {anc['seq']} existed: records were removed",
            lineno + 1,
            prev_seq + 1,
        )
    if not expected:
        return
    res["head_checked"] = True
    want_seq = expected.get("seq")
    if expected.get("hash") == res["head"]:
        return
    if isinstance(want_seq, int) and want_seq > prev_seq:
        raise _Broken(
            f"the log ends at seq {prev_seq} but the head says seq {want_seq}: "
            "the last record(s) were removed or truncated",
            lineno + 1,
            prev_seq + 1,
        )
    raise _Broken(
        f"the last record (line {lineno}, seq {prev_seq}) does not match the expected head: edited, or the log was cut",
        lineno,
        prev_seq,
    )


def verify(log_path: str, expected_head: Any = None, chain_only: bool = False, anchor: Any = None) -> Dict[str, Any]:
    """Check the chain; report the first broken or missing record.

    Returns ``{ok, records, head, first_bad_line, first_bad_seq, reason, runs, chain_only, head_checked,
    anchor_checked}``. ``first_bad_line`` is 1-based. Detected: an edited line (the next record's ``prev`` no
    longer matches; ``seq`` is continuous, so the edited line is named), a deleted line (``seq`` gap), an
    inserted or reordered line, a torn line, and a removed or truncated end (the last hash or ``seq`` differs
    from ``expected_head``).

    Fails closed: without ``expected_head`` (or with a head file that is missing) the result is not ok, since
    a cut-off end would go unseen; ``chain_only=True`` is the explicit request to check the chain alone (any
    ``expected_head`` is then ignored). ``anchor`` (see ``read_anchor``) is a head kept off the controller: the
    record with its ``seq`` must still be in the log with its hash.
    """
    res: Dict[str, Any] = {
        "ok": False,
        "path": log_path,
        "records": 0,
        "head": None,
        "last_seq": None,
        "first_bad_line": None,
        "first_bad_seq": None,
        "reason": None,
        "runs": [],
        "chain_only": bool(chain_only),
        "head_checked": False,
        "anchor_checked": None,
    }
    expected: Dict[str, Any] = {}
    try:
        expected = _expected_head(expected_head, chain_only)
        try:
            anc = read_anchor(anchor)
        except (OSError, ValueError) as e:
            raise _Broken(f"cannot read the anchor: {e}", bad_line=False) from None
        try:
            lineno, prev_hash, prev_seq, runs = _walk(log_path, anc, res)
        except OSError as e:
            reason = f"cannot read {log_path}: {e.strerror or e}"
            if e.errno == errno.ENOENT and expected:
                reason += f" (the head says {expected.get('seq', 'some')} record(s) existed)"
            raise _Broken(reason, bad_line=False) from None
        res.update(records=lineno, head=prev_hash if lineno else None, last_seq=prev_seq if lineno else None, runs=runs)
        _check_end(res, anc, expected)
    except _Broken as b:
        res["reason"] = b.reason
        if b.bad_line:
            res["first_bad_line"], res["first_bad_seq"] = b.line, b.seq
        return res
    res["ok"] = True
    return res


def diff_summary(diff: Any) -> Optional[Dict[str, Any]]:
    """Summarize a task ``diff`` without values: changed/added/removed keys, or line counts for text."""
    if not diff:
        return None
    diffs = diff if isinstance(diff, list) else [diff]
    out: List[Dict[str, Any]] = []
    for d in diffs[:20]:
        if not isinstance(d, dict):
            continue
        before, after = d.get("before"), d.get("after")
        item: Dict[str, Any] = {}
        for k in ("before_header", "after_header"):
            if isinstance(d.get(k), str) and not SECRET_KEY.search(d[k]):
                item[k] = d[k][:200]
        if isinstance(before, dict) or isinstance(after, dict):
            b = before if isinstance(before, dict) else {}
            a = after if isinstance(after, dict) else {}
            item["added"] = sorted(str(k) for k in a if k not in b)[:100]
            item["removed"] = sorted(str(k) for k in b if k not in a)[:100]
            item["changed"] = sorted(str(k) for k in a if k in b and a[k] != b[k])[:100]
        elif isinstance(before, str) or isinstance(after, str):
            item["before_lines"] = len(before.splitlines()) if isinstance(before, str) else 0
            item["after_lines"] = len(after.splitlines()) if isinstance(after, str) else 0
        elif "prepared" in d:
            item["prepared"] = True
        if item:
            out.append(item)
    return {"items": out} if out else None


def scrub(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of the given secret values (4+ chars) by ``********``."""
    for s in sorted({s for s in secrets if isinstance(s, str) and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(s, "********")
    return text


def secret_values(variables: Any, depth: int = 0) -> List[str]:
    """Values of keys that look secret (password, token, ...) anywhere in a vars mapping."""
    found: List[str] = []
    if depth > 6:
        return found
    if isinstance(variables, dict):
        for k, v in variables.items():
            if isinstance(k, str) and SECRET_KEY.search(k) and isinstance(v, (str, int)) and not isinstance(v, bool):
                found.append(str(v))
            elif isinstance(v, (dict, list)):
                found.extend(secret_values(v, depth + 1))
    elif isinstance(variables, list):
        for v in variables[:1000]:
            found.extend(secret_values(v, depth + 1))
    return found
