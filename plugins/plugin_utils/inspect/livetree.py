# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A live node's evidence parsed on the controller (``collect_info`` with ``parse_on: controller``).

The node runs the tools and sends their output back as a capture's files (``gpuops.cluster.capture`` without
``dest``: a name -> text mapping, ``capture.json`` included). Here those files are written into a private temporary
directory and read by the very collectors that read a capture directory (``_collect.collect_all``), then the
result is marked as what it is: a live collection (``mode: live``, the node's own capture time as the evidence
time). The node imports no parser, which is most of a live collection's cost (docs/performance.md).

The mapping comes from a managed node, so it is data from outside: every name must be a plain file name (full
match, no path, no dot-name), every value text, the whole bounded in size; anything else is an error record
(the node's domains stay unknown), never a file written outside the temporary directory.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import shutil
import tempfile
import zlib
from typing import Any, Dict, Optional, Sequence

from ansible_collections.gpuops.cluster.plugins.module_utils import _evidence_time, _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils.collectors.collect import (
    ALL_DOMAINS,
    DEFAULT_LIVE_DOMAINS,
    SCHEMA,
    collect_all,
)
from ansible_collections.gpuops.cluster.plugins.module_utils._common import error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow_iso

#: a capture file name as ``_livecapture`` writes them (``mlxlink-mlx5_0.txt``, ``ethtool-S-ens1f0np0.txt``; an
#: interface name may hold ``:``, as ``_ib_optics_cmds.SAFE_NAME`` allows): one plain name, never a path
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:+-]{0,127}")
#: the most a node may send back (a 8-GPU ``nvidia-smi -q -x`` is ~0.5 MB; a kernel log can be a few MB)
MAX_BYTES = 64 * 1024 * 1024
MAX_FILES = 256
PARSED_ON = "controller"


def _refusal(msg: str) -> Dict[str, Any]:
    now = utcnow_iso()
    return {
        "schema": SCHEMA,
        "collected_at": now,
        "mode": "live",
        "capture_dir": None,
        "hostname": None,
        "evidence_time": now,
        "evidence_time_source": _evidence_time.SOURCE_LIVE,
        "parsed_on": PARSED_ON,
        "errors": [error_record("collect", "parse", msg, source="gpuops.cluster.capture")],
    }


def check_tree(tree: Any) -> Optional[str]:
    """Why ``tree`` (the node's answer) cannot be read as a capture, or None when it can."""
    if not isinstance(tree, dict):
        return "the node sent %s, not a mapping of capture files" % type(tree).__name__
    if len(tree) > MAX_FILES:
        return "the node sent %d files (at most %d)" % (len(tree), MAX_FILES)
    total = 0
    for name, text in tree.items():
        if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
            return "the node sent a file name that is not a plain capture file name: %r" % (str(name)[:80],)
        if not isinstance(text, str):
            return "the node sent %s for %s, not text" % (type(text).__name__, name)
        total += len(text)
        if total > MAX_BYTES:
            return "the node sent more than %d bytes" % MAX_BYTES
    if "capture.json" not in tree:
        return "the node's answer has no capture.json"
    return None


def unpack(packed: Any) -> Any:
    """The mapping ``_livecapture.pack`` made. Raises ValueError for anything else: not base64, not zlib, cut
    short, over ``MAX_BYTES`` once inflated (checked while inflating: a small bomb is never expanded whole), not
    UTF-8 JSON."""
    if not isinstance(packed, str):
        raise ValueError("not a string but %s" % type(packed).__name__)
    try:
        raw = base64.b64decode(packed.encode("ascii"), validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, MAX_BYTES + 1)
    except (UnicodeEncodeError, binascii.Error, zlib.error) as exc:
        raise ValueError("not a packed capture (%s)" % exc) from None
    if len(data) > MAX_BYTES or inflater.unconsumed_tail:
        raise ValueError("more than %d bytes once inflated" % MAX_BYTES)
    if not inflater.eof:
        raise ValueError("cut short (the compressed stream does not end)")
    try:
        return _safejson.loads(data.decode("utf-8"), max_bytes=MAX_BYTES, what="the packed capture")
    except ValueError as exc:  # not UTF-8, not JSON, or nested too deep (_safejson: never RecursionError)
        raise ValueError("not JSON once inflated (%s)" % exc) from None


def parse_packed(
    packed: Any,
    domains: Optional[Sequence[str]] = None,
    timeout: float = 30.0,
    options: Optional[Dict[str, Dict[str, Any]]] = None,
) -> Dict[str, Any]:
    """:func:`parse_tree` of a packed capture (``gpuops.cluster.capture`` with ``pack``); a packed string that
    cannot be read is a refusal (one ``collect`` error, every domain unknown), never an exception."""
    try:
        tree = unpack(packed)
    except ValueError as exc:
        return _refusal("the node's packed capture cannot be read: %s" % exc)
    return parse_tree(tree, domains=domains, timeout=timeout, options=options)


def captured_domains(tree: Dict[str, Any]) -> list:
    """The domains the node captured (capture.json ``domains``)."""
    try:
        meta = _safejson.loads(tree.get("capture.json") or "", what="capture.json")
    except ValueError:  # not JSON or over the budget: collect_all reports it (a collector.error naming it)
        meta = None
    listed = meta.get("domains") if isinstance(meta, dict) else None
    if not isinstance(listed, list):
        # a whole capture: what a live collection collects, and DCGM when its diagnostics were run
        return list(DEFAULT_LIVE_DOMAINS) + (["dcgm"] if "dcgmi-diag.txt" in tree else [])
    return [d for d in ALL_DOMAINS if d in listed]


def parse_tree(
    tree: Any,
    domains: Optional[Sequence[str]] = None,
    timeout: float = 30.0,
    options: Optional[Dict[str, Dict[str, Any]]] = None,
    tmp_root: Optional[str] = None,
) -> Dict[str, Any]:
    """The facts of a live node from the capture files it sent (see the module docstring). Never raises for
    bad input: a refused answer is a facts document with one ``collect`` error and no domain (all unknown)."""
    why = check_tree(tree)
    if why:
        return _refusal(why)
    if domains is None:
        # what the node was asked for: a domain it did not capture is "not collected", never "not captured"
        domains = captured_domains(tree)
    tmp = tempfile.mkdtemp(prefix="gpuops-live-", dir=tmp_root)  # 0700, ours alone
    try:
        for name, text in tree.items():
            # O_EXCL | O_NOFOLLOW in a directory only we can write: a plain new file, never through a link
            fd = os.open(os.path.join(tmp, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write(text)
        facts = collect_all(capture_dir=tmp, domains=domains, timeout=timeout, options=options)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _as_live(facts, tmp)
    return facts


def _as_live(facts: Dict[str, Any], tmp: str) -> None:
    """Mark the facts read from the temporary directory as the live collection they are."""
    facts["mode"] = "live"
    facts["capture_dir"] = None
    facts["parsed_on"] = PARSED_ON
    # the node's clock when it ran the tools (capture.json captured_at), as collect_info live would say
    if facts.get("evidence_time_source") == _evidence_time.SOURCE_META:
        facts["evidence_time_source"] = _evidence_time.SOURCE_LIVE
    # the temporary directory is no evidence: error records name the file, not where it was parsed
    prefix = tmp + os.sep
    for err in _errors(facts):
        for key in ("source", "message"):
            value = err.get(key)
            if isinstance(value, str) and tmp in value:
                err[key] = value.replace(prefix, "").replace(tmp, "<node>")


def _errors(facts: Dict[str, Any]):
    seen = set()
    for holder in [facts] + [v for v in facts.values() if isinstance(v, dict)]:
        for err in holder.get("errors") or []:
            if isinstance(err, dict) and id(err) not in seen:
                seen.add(id(err))
                yield err
