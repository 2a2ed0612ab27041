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

Command line (no Ansible needed)::

    python -m ansible_collections.gpuops.cluster.plugins.plugin_utils._audit LOG [--head HEAD.json|HASH]
        [--anchor SEQ:HASH|HEAD-JSON] [--chain-only]
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import hashlib
import json
import os
import re
import sys
from typing import Any, Dict, Iterable, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils._common import (
    ensure_private_dir,
    open_private,
    write_private_atomic,
)

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
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


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
                    seq = int(json.loads(last.decode("utf-8")).get("seq", 0)) + 1
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
            data = json.loads(f.read().decode("utf-8"))
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
            data = json.loads(s)
        elif os.path.exists(s):
            with open(s, "rb") as f:
                data = json.loads(f.read().decode("utf-8"))
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
    if not chain_only:
        if expected_head is None or expected_head == "":
            res["reason"] = (
                "no head to check the end of the log against (head.json missing?): removed or truncated last "
                "records would go unseen; give the head (or an anchored copy), or ask for a chain-only check"
            )
            return res
        try:
            expected = read_head(expected_head)
        except (OSError, ValueError) as e:
            res["reason"] = f"cannot read the expected head: {e}"
            return res
        if not isinstance(expected.get("hash"), str):
            res["reason"] = "cannot read the expected head: no 'hash'"
            return res
    try:
        anc = read_anchor(anchor)
    except (OSError, ValueError) as e:
        res["reason"] = f"cannot read the anchor: {e}"
        return res
    prev_hash = GENESIS
    prev_seq = 0
    lineno = 0
    runs: List[str] = []

    def bad(line: int, reason: str, seq: Any = None) -> Dict[str, Any]:
        res["first_bad_line"] = line
        res["first_bad_seq"] = seq
        res["reason"] = reason
        return res

    try:
        for raw in _lines(log_path):
            lineno += 1
            if not raw.endswith(b"\n"):
                return bad(lineno, f"line {lineno} is torn (no newline): a write was interrupted or the file cut")
            body = raw[:-1]
            if len(body) > MAX_LINE:
                return bad(lineno, f"line {lineno} is longer than {MAX_LINE} bytes")
            try:
                rec = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError):
                return bad(lineno, f"line {lineno} is not a JSON record")
            if not isinstance(rec, dict):
                return bad(lineno, f"line {lineno} is not a JSON object")
            seq = rec.get("seq")
            if not isinstance(seq, int) or isinstance(seq, bool):
                return bad(lineno, f"line {lineno} has no sequence number")
            if seq != prev_seq + 1:
                if seq > prev_seq + 1:
                    return bad(
                        lineno,
                        f"record(s) seq {prev_seq + 1}..{seq - 1} missing before line {lineno} (deleted)",
                        prev_seq + 1,
                    )
                return bad(lineno, f"line {lineno} has seq {seq} after seq {prev_seq} (inserted or reordered)")
            if rec.get("prev") != prev_hash:
                if lineno == 1:
                    return bad(1, "line 1 does not start the chain (earlier records removed?)", seq)
                return bad(
                    lineno - 1,
                    f"line {lineno - 1} (seq {prev_seq}) was modified: line {lineno}'s prev no longer matches it",
                    prev_seq,
                )
            prev_hash = line_hash(body)
            prev_seq = seq
            if anc is not None and seq == anc["seq"]:
                if prev_hash != anc["hash"]:
                    return bad(
                        lineno,
                        f"line {lineno} (seq {seq}) does not match the anchored head: the log was rewritten",
                        seq,
                    )
                res["anchor_checked"] = True
            rid = rec.get("run_id")
            if isinstance(rid, str) and (not runs or runs[-1] != rid) and rid not in runs:
                runs.append(rid)
    except OSError as e:
        res["reason"] = f"cannot read {log_path}: {e.strerror or e}"
        if e.errno == errno.ENOENT and expected:
            res["reason"] += f" (the head says {expected.get('seq', 'some')} record(s) existed)"
        return res
    res["records"] = lineno
    res["head"] = prev_hash if lineno else None
    res["last_seq"] = prev_seq if lineno else None
    res["runs"] = runs
    if anc is not None and res["anchor_checked"] is None:
        return bad(
            lineno + 1,
            f"the log ends at seq {prev_seq} but the anchor says seq {anc['seq']} existed: records were removed",
            prev_seq + 1,
        )
    if expected:
        res["head_checked"] = True
        want_seq = expected.get("seq")
        if expected.get("hash") != (prev_hash if lineno else None):
            if isinstance(want_seq, int) and want_seq > prev_seq:
                return bad(
                    lineno + 1,
                    f"the log ends at seq {prev_seq} but the head says seq {want_seq}: "
                    "the last record(s) were removed or truncated",
                    prev_seq + 1,
                )
            return bad(
                lineno,
                f"the last record (line {lineno}, seq {prev_seq}) does not match the expected head: "
                "edited, or the log was cut",
                prev_seq,
            )
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


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m ...module_utils._audit LOG [--head PATH|HASH] [--anchor A] [--chain-only]``: exit 0 when the
    chain verifies and ends at the head; a missing head is a failure unless ``--chain-only`` is given."""
    import argparse

    p = argparse.ArgumentParser(prog="gpuops-audit-verify", description="Verify a gpuops.cluster audit log")
    p.add_argument("log")
    p.add_argument("--head", help="head.json path or sha256; default: head.json beside the log (missing: failure)")
    p.add_argument(
        "--anchor", help="a head kept off the controller (SEQ:HASH, a head JSON line or file) the log must contain"
    )
    p.add_argument(
        "--chain-only",
        "--no-head",
        dest="chain_only",
        action="store_true",
        help="check the chain alone, without a head (removed last records then go unseen)",
    )
    args = p.parse_args(argv)
    head: Any = None if args.chain_only else (args.head or default_head_path(args.log))
    res = verify(args.log, head, chain_only=args.chain_only, anchor=args.anchor)
    json.dump(res, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())  # CLI only; never reached when imported by a module
