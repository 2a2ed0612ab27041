# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report files of an inspection on disk: report.json, its facts side file, report.md, report.html, gpuops.prom.

report.json carries the findings, statuses and summaries; the nodes' whole facts go to ``facts.json.gz`` beside
it (issue 41: report.json of 10,000 real-sized nodes was 706 MB, now a few MB), named in report.json's
``facts_file`` with its SHA-256. :func:`load_report` reads both back as one dict (the facts checked against the
digest). The in-memory report (the ledger, the host summaries, the fleet checkup) keeps the facts: only the
files change. Every file is written privately and atomically (0600; gpuops.prom 0640 for node_exporter).
"""

from __future__ import annotations

import collections
import concurrent.futures
import gzip
import hashlib
import json
import os
import zlib
from typing import Any, Dict, Iterable, Iterator, Optional

from ansible_collections.gpuops.cluster.plugins.plugin_utils import _json
from ansible_collections.gpuops.cluster.plugins.plugin_utils.inspect import report as _report, run_notes as _run_notes
from ansible_collections.gpuops.cluster.plugins.module_utils._files import ensure_private_dir, write_private_atomic
from ansible_collections.gpuops.cluster.plugins.module_utils._timeutil import utcnow

#: File modes of the reports: private to the operator; gpuops.prom is group-readable for node_exporter's
#: textfile collector (give the report directory node_exporter's group, setgid, to let it read the file).
REPORT_MODES = {"json": 0o600, "markdown": 0o600, "html": 0o600, "prometheus": 0o640, "facts": 0o600}
#: The stable file node_exporter's textfile collector reads (in ``textfile_dir``, docs/metrics.md).
TEXTFILE_NAME = "gpuops.prom"
#: The facts side file, beside report.json: gzip of ``{"schema": FACTS_SCHEMA, "generated_at": ..., "nodes":
#: {host: facts}}`` (compact JSON, sorted hosts).
FACTS_FILE = "facts.json.gz"
FACTS_SCHEMA = "gpuops.report-facts/v1"
#: zlib level 1: the facts of 10,000 real-sized nodes (~700 MB of JSON) compress ~10x in seconds; level 6 costs
#: three times the time for a few per cent (docs/performance.md "Reports at 10,000 nodes")
FACTS_LEVEL = 1


class ReportFileError(ValueError):
    """A report directory that cannot be read back (missing or altered facts file: the message names it)."""


def write_textfile(text: str, textfile_dir: str) -> str:
    """Write ``text`` atomically to ``<textfile_dir>/gpuops.prom``, mode 0640; return the path.

    The directory must exist (it is node_exporter's, created by whoever installed it: a directory created here
    would be 0700 and unreadable to node_exporter). The file is created in it and renamed over the old one, so
    the collector never reads half a file; it gets the directory's group when the directory is setgid, which
    is how node_exporter (another user) reads a 0640 file (docs/metrics.md).
    """
    if not os.path.isdir(textfile_dir):
        raise NotADirectoryError("textfile directory %r does not exist or is not a directory" % textfile_dir)
    return write_private_atomic(os.path.join(textfile_dir, TEXTFILE_NAME), text, REPORT_MODES["prometheus"])


def _has_facts(report: Dict[str, Any]) -> bool:
    nodes = report.get("nodes")
    return isinstance(nodes, dict) and any(isinstance(n, dict) and "facts" in n for n in nodes.values())


def _facts_pieces(report: Dict[str, Any]) -> Iterator[str]:
    yield '{"generated_at":%s,"nodes":{' % _json.dumps(report.get("generated_at"))
    sep = ""
    for host in sorted(report["nodes"]):
        n = report["nodes"][host]
        if isinstance(n, dict) and "facts" in n:
            yield "%s%s:%s" % (sep, _json.dumps(host), _report.facts_json(n["facts"]))
            sep = ","
    yield '},"schema":%s}\n' % _json.dumps(FACTS_SCHEMA)


#: Pieces of this many characters are compressed each as one gzip member (RFC 1952 2.2: a gzip file is a series
#: of members; gzip, zcat and Python's gzip read them as one stream), on :data:`GZIP_THREADS` threads: zlib
#: releases the GIL while it compresses, so the two cores of a small controller share the work.
GZIP_CHUNK = 4 << 20
GZIP_THREADS = 2


def _member(text: str) -> bytes:
    z = zlib.compressobj(FACTS_LEVEL, zlib.DEFLATED, 31)
    return z.compress(text.encode("utf-8")) + z.flush()


def _chunks(pieces: Iterable[str]) -> Iterator[str]:
    buf, size = [], 0
    for piece in pieces:
        buf.append(piece)
        size += len(piece)
        if size >= GZIP_CHUNK:
            yield "".join(buf)
            buf, size = [], 0
    if buf:
        yield "".join(buf)


def _gzipped(pieces: Iterable[str], digest: Any, counter: Dict[str, int]) -> Iterator[bytes]:
    """``pieces`` as a gzip file of one member per chunk (zlib level :data:`FACTS_LEVEL`), compressed on
    :data:`GZIP_THREADS` threads with at most twice as many chunks in flight, in order; hashed and counted as
    it is written."""
    with concurrent.futures.ThreadPoolExecutor(GZIP_THREADS) as pool:
        pending: collections.deque = collections.deque()
        for chunk in _chunks(pieces):
            pending.append(pool.submit(_member, chunk))
            while len(pending) > 2 * GZIP_THREADS or (pending and pending[0].done()):
                out = pending.popleft().result()
                digest.update(out)
                counter["bytes"] += len(out)
                yield out
        while pending:
            out = pending.popleft().result()
            digest.update(out)
            counter["bytes"] += len(out)
            yield out


def write_facts_file(report: Dict[str, Any], report_dir: str) -> Dict[str, Any]:
    """The nodes' facts to ``<report_dir>/facts.json.gz`` (0600, atomic); return report.json's ``facts_file``
    entry: ``{path (relative to report.json), sha256 (of the file's bytes), bytes, nodes, schema}``."""
    digest, counter = hashlib.sha256(), {"bytes": 0}
    path = os.path.join(report_dir, FACTS_FILE)
    write_private_atomic(path, _gzipped(_facts_pieces(report), digest, counter), REPORT_MODES["facts"])
    count = sum(1 for n in report["nodes"].values() if isinstance(n, dict) and "facts" in n)
    return {
        "path": FACTS_FILE,
        "sha256": digest.hexdigest(),
        "bytes": counter["bytes"],
        "nodes": count,
        "schema": FACTS_SCHEMA,
    }


def write_json_stream(report: Dict[str, Any], path: str, facts: bool = True) -> str:
    """report.json at ``path`` from ``_report.iter_json`` (with ``facts=False`` the nodes' facts left out),
    streamed through ``write_private_atomic``: a 0600 temporary file beside it, fsync, rename, never through a
    link. With ``facts=True`` the bytes of ``_report.to_json``."""
    return write_private_atomic(path, _report.iter_json(report, facts=facts), REPORT_MODES["json"])


def write_reports(
    report: Dict[str, Any],
    report_dir: str,
    templates_dir: Optional[str] = None,
    textfile_dir: Optional[str] = None,
    inline_facts: bool = False,
    progress: Any = None,
) -> Dict[str, str]:
    """Write report.json, facts.json.gz, report.md, report.html and gpuops.prom; return their paths.

    The nodes' facts (when the report holds them: ``include_facts``) go to ``facts.json.gz``
    (:func:`write_facts_file`, returned as ``facts``), named with its SHA-256 in report.json's ``facts_file``;
    report.json holds no facts. ``inline_facts=True`` writes them in report.json as before issue 41 (no side
    file). With ``textfile_dir`` gpuops.prom is also written there (:func:`write_textfile`), returned as
    ``textfile``. ``progress``: as ``pipeline.inspect_nodes``'s (``_run_notes.progress_sink``).

    report.md and report.html are rendered from the site's templates in ``templates_dir`` where it has them,
    else from the collection's (``_report.environment``); a template error raises ``_report.ReportTemplateError``
    before any file is written.

    Each file is written privately and atomically (``_files.write_private_atomic``: temporary file created
    0600 in ``report_dir``, fsync, rename; never through a link), whatever the umask; a missing ``report_dir``
    is created 0700. report.json and the facts are streamed node by node: never held as one text.
    """
    n_nodes = len(report.get("nodes") or {})
    with _run_notes.Stage(_run_notes.progress_sink(progress, n_nodes), "reports", n_nodes):
        return _write_reports(report, report_dir, templates_dir, textfile_dir, inline_facts)


def _write_reports(
    report: Dict[str, Any], report_dir: str, templates_dir: Optional[str], textfile_dir: Optional[str], inline: bool
) -> Dict[str, str]:
    ts = utcnow().timestamp()
    site = {"templates_dir": templates_dir} if templates_dir else {}
    outputs = {
        "markdown": ("report.md", _report.to_markdown(report, **site)),
        "html": ("report.html", _report.to_html(report, **site)),
        "prometheus": ("gpuops.prom", _report.to_prometheus(report, generated_ts=ts)),
    }
    ensure_private_dir(report_dir)
    paths: Dict[str, str] = {}
    side = not inline and _has_facts(report)
    on_disk = report
    if side:
        entry = write_facts_file(report, report_dir)
        paths["facts"] = os.path.join(report_dir, FACTS_FILE)
        on_disk = dict(report, facts_file=entry)
    else:
        _remove_stale_facts(report_dir)
    paths["json"] = write_json_stream(on_disk, os.path.join(report_dir, "report.json"), facts=not side)
    for key, (name, text) in outputs.items():
        paths[key] = write_private_atomic(os.path.join(report_dir, name), text, REPORT_MODES[key])
    if textfile_dir:
        paths["textfile"] = write_textfile(outputs["prometheus"][1], textfile_dir)
    return {k: paths[k] for k in ("json", "facts", "markdown", "html", "prometheus", "textfile") if k in paths}


def _remove_stale_facts(report_dir: str) -> None:
    """A facts file left by an earlier run in the same directory would not match this report.json: removed."""
    try:
        os.unlink(os.path.join(report_dir, FACTS_FILE))
    except FileNotFoundError:
        pass


def load_facts(report: Dict[str, Any], report_dir: str) -> Dict[str, Any]:
    """host -> facts from the side file report.json names (``facts_file``), checked against its SHA-256."""
    entry = report.get("facts_file")
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        raise ReportFileError("report.json in %s names no facts file" % report_dir)
    rel = entry["path"]
    if os.path.isabs(rel) or ".." in rel.replace("\\", "/").split("/"):
        raise ReportFileError("report.json's facts_file path %r is not a file beside it" % rel)
    path = os.path.join(report_dir, rel)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ReportFileError("facts file %s cannot be read: %s" % (path, exc.strerror or exc)) from exc
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise ReportFileError("facts file %s does not match report.json's sha256 (altered or from another run)" % path)
    try:
        body = json.loads(gzip.decompress(data).decode("utf-8"))
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise ReportFileError("facts file %s is not gzip-compressed JSON: %s" % (path, exc)) from exc
    if not isinstance(body, dict) or body.get("schema") != FACTS_SCHEMA or not isinstance(body.get("nodes"), dict):
        raise ReportFileError("facts file %s is not a %s document" % (path, FACTS_SCHEMA))
    return body["nodes"]


def load_report(path: str, facts: bool = True) -> Dict[str, Any]:
    """report.json at ``path`` (a file or its directory) as a dict; with ``facts`` (default) each node's facts put
    back from the side file (:func:`load_facts`), as the in-memory report held them. A report.json with its
    facts inline (``inline_facts``, or written before issue 41) is returned as it is."""
    if os.path.isdir(path):
        path = os.path.join(path, "report.json")
    try:
        with open(path, encoding="utf-8") as fh:
            report = json.load(fh)
    except OSError as exc:
        raise ReportFileError("report %s cannot be read: %s" % (path, exc.strerror or exc)) from exc
    except ValueError as exc:
        raise ReportFileError("report %s is not JSON: %s" % (path, exc)) from exc
    if not isinstance(report, dict):
        raise ReportFileError("report %s is not a JSON object" % path)
    if facts and "facts_file" in report:
        side = load_facts(report, os.path.dirname(os.path.abspath(path)))
        for host, n in (report.get("nodes") or {}).items():
            if isinstance(n, dict) and host in side:
                n["facts"] = side[host]
    return report
