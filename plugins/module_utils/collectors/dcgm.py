# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``dcgmi diag -r N`` text output -> the ``dcgm`` domain of docs/facts.md.

Two layouts (formats.md section 9):
- DCGM 3.x: Title-Case test names, results ``Pass``, ``Pass - All``, ``Skip - All``,
  ``Pass - GPUs: 0, 2, 3`` with continuation rows ``| | Fail - GPU: 1 |``;
- DCGM 4.x: lower-case plugin names, one aggregate row then per-GPU rows ``| | GPU0: Pass |``.
``Warning`` / ``Info`` / ``Error`` rows follow a test; their text is wrapped at the column width in the
middle of words and is joined back. ``Error: ...`` lines outside the table mean the diagnostic could
not run: an error record of kind ``tool_error``, never a GPU failure.

Runs on managed nodes (Python 3.8+) and on the controller. No Ansible imports.
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpuops.cluster.plugins.module_utils import _safejson
from ansible_collections.gpuops.cluster.plugins.module_utils._common import ParseError, Records, error_record
from ansible_collections.gpuops.cluster.plugins.module_utils._files import read_text
from ansible_collections.gpuops.cluster.plugins.module_utils._runner import run_command, which

PARSER = "dcgmi_diag"
DOMAIN = "dcgm"
CAPTURE_FILE = "dcgmi-diag.txt"

#: Worst first.
_RANK = {"fail": 4, "warn": 3, "pass": 2, "skip": 1}
_RESULT_WORDS = {
    "pass": "pass",
    "passed": "pass",
    "fail": "fail",
    "failed": "fail",
    "failure": "fail",
    "error": "fail",
    "warn": "warn",
    "warning": "warn",
    "skip": "skip",
    "skipped": "skip",
    "not run": "skip",
}
_MESSAGE_ROWS = ("warning", "info", "error")
_SECTION = re.compile(r"^[|+]-+\s+([A-Za-z][A-Za-z ]*?)\s+-+[+|]")
_BORDER = re.compile(r"^[+|][-=+|]+$")
_RESULT = re.compile(
    r"^(Pass(?:ed)?|Fail(?:ed|ure)?|Warn(?:ing)?|Skip(?:ped)?|Error|Not Run)\b\s*"
    r"(?:-\s*(?:(All)|GPUs?\s*:?\s*([0-9,\s]+)))?\s*$",
    re.IGNORECASE,
)
_PER_GPU = re.compile(
    r"^GPU\s*([0-9]{1,9})\s*:\s*(Pass(?:ed)?|Fail(?:ed)?|Warn(?:ing)?|Skip(?:ped)?|Error|Not Run)\b", re.I
)
_MSG_NAME = re.compile(r"^(Warning|Info|Error)\b\s*:?\s*(?:GPU\s*([0-9]{1,9}))?", re.IGNORECASE)
_GPU_IN_TEXT = re.compile(r"\bGPU\s*([0-9]{1,9})\b")
_LEVEL2 = ("integration", "hardware")
_LEVEL3_TESTS = (
    "diagnostic",
    "targeted stress",
    "targeted_stress",
    "targeted power",
    "targeted_power",
    "memory bandwidth",
    "memory_bandwidth",
    "sm stress",
    "sm_stress",
)
_LEVEL4_TESTS = ("eud", "pulse", "memtest", "extended utility")


#: DCGM's error severity (dcgm_errors.h ``dcgmErrorSeverity_t``), as ``error_severity`` in ``dcgmi diag -j``
SEVERITIES = {0: "none", 1: "monitor", 2: "isolate", 3: "unknown", 4: "triage", 5: "config", 6: "reset"}
#: The fixed words of DCGM's diag messages (dcgm_errors.h ``DCGM_FR_*_MSG``) -> (DCGM_FR code, its severity in
#: dcgm_errors.c; gpu-knowledge-2026.md section 5). The text table carries no severity: the message names it.
#: ``internal``: DCGM_FR_INTERNAL, the diagnostic itself failed (NVIDIA/DCGM#254: a missing helper binary).
_MESSAGE_CLASSES = (
    ("row remappings are pending", "PENDING_ROW_REMAP", "reset"),
    ("row remapping failed", "ROW_REMAP_FAILURE", "reset"),
    ("rows were remapped", "UNCORRECTABLE_ROW_REMAP", "reset"),
    ("pending page retirements together with a dbe", "DBE_PENDING_PAGE_RETIREMENTS", "reset"),
    ("requires a reset to recover", "GPU_RECOVERY_RESET", "reset"),
    ("processes with graphics contexts open", "GRAPHICS_PROCESSES", "reset"),
    ("faulty memory elements", "FAULTY_MEMORY", "isolate"),
    ("a double-bit ecc error has occured", "CUDA_DBE", "isolate"),
    ("uncontained error (xid 95)", "UNCONTAINED_ERROR", "isolate"),
    ("nvlink errors on gpu", "NVLINK_ERROR_CRITICAL", "isolate"),
    ("nvlink errors found occuring per second", "NVLINK_CRC_ERROR_THRESHOLD", "isolate"),
    ("miscompare failure in the l1 cache", "L1TAG_MISCOMPARE", "isolate"),
    ("detected fatal nvswitch sxid", "SXID_ERROR", "isolate"),
    ("host-side pcie replay violation", "PCIE_H_REPLAY_VIOLATION", "isolate"),
    ("persistence mode for gpu", "PERSISTENCE_MODE", "config"),
    ("performance-limiting environment variable", "BAD_CUDA_ENV", "config"),
    ("found driver on the denylist", "DENYLISTED_DRIVER", "config"),
    ("because ecc is not enabled", "ECC_DISABLED", "config"),
    ("ecc memory is not turned on", "ECC_DISABLED", "config"),
    ("running at pci link width", "PCIE_WIDTH", "config"),
    ("enforced power limit on gpu", "ENFORCED_POWER_LIMIT", "config"),
    ("test is skipped for this gpu", "TEST_DISABLED", "config"),
    ("detected xid", "XID_ERROR", "triage"),
    ("running at pci link generation", "PCIE_GENERATION", "triage"),
    ("minimum required bandwidth", "LOW_BANDWIDTH", "triage"),
    ("maximum allowed latency", "HIGH_LATENCY", "triage"),
    ("only achieved a memory bandwidth", "MEMORY_BANDWIDTH", "triage"),
    ("did not reach desired power minimum", "TARGET_POWER", "triage"),
    ("nvlinks are up out of the expected", "GPU_EXPECTED_NVLINKS_UP", "triage"),
    ("thermal violations", "THERMAL_VIOLATIONS", "monitor"),
    ("clocks are being throttled", "CLOCKS_EVENT_VIOLATION", "monitor"),
    ("user-specified maximum allowed temperature", "TEMP_VIOLATION", "monitor"),
    ("is in a pending state", "ECC_PENDING", "monitor"),
    ("nonfatal errors on nvswitch", "NVSWITCH_NON_FATAL_ERROR", "monitor"),
    ("there was an internal error during the test", "INTERNAL", "internal"),
)


def classify_message(message: str) -> Any:
    """``(DCGM_FR code, severity)`` of a diag message from its fixed words, or ``(None, None)``."""
    low = " ".join(str(message).lower().split())
    for words, code, severity in _MESSAGE_CLASSES:
        if words in low:
            return code, severity
    return None, None


def _severity(value: Any) -> Optional[str]:
    """``error_severity`` of ``dcgmi diag -j`` (a number, or a name such as ``DCGM_ERROR_ISOLATE``)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return SEVERITIES.get(value, "unknown")
    if isinstance(value, str) and value.strip():
        v = value.strip().lower().replace("dcgm_error_", "")
        if v.isdigit():
            return SEVERITIES.get(int(v), "unknown")
        return v if v in SEVERITIES.values() else "unknown"
    return None


def _issue(message: str, gpu: Optional[str], item: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """One diag error with DCGM's severity: from the JSON item when it says, else from the message's words."""
    code, severity = classify_message(message)
    item = item or {}
    given = _severity(item.get("error_severity"))
    ids = _GPU_IN_TEXT.findall(message)
    return {
        "gpu": gpu if gpu is not None else (ids[0] if ids else None),
        "error_id": item.get("error_id") if isinstance(item.get("error_id"), int) else None,
        "category": item.get("error_category"),
        "code": code,
        "severity": given or severity,
        "message": message[:500],
    }


def _word(text: str) -> Optional[str]:
    return _RESULT_WORDS.get(text.strip().lower())


def worst(*results: Optional[str]) -> Optional[str]:
    """The worst of pass/fail/warn/skip values (None ignored)."""
    best: Optional[str] = None
    for r in results:
        if r is not None and (best is None or _RANK.get(r, 0) > _RANK.get(best, 0)):
            best = r
    return best


def _cells(line: str) -> Optional[List[str]]:
    s = line.rstrip()
    if not s.startswith("|"):
        return None
    inner = s[1:-1] if s.endswith("|") and len(s) > 1 else s[1:]
    name, sep, value = inner.partition("|")
    if not sep:
        return None
    return [name, value]


def _expand_ids(text: str) -> List[str]:
    return [t.strip() for t in text.split(",") if _GPU_ID.fullmatch(t.strip())]


#: A GPU id: ASCII digits (``²`` and ``٣`` pass str.isdigit() but are not ids), at most 9 of them.
_GPU_ID = re.compile(r"[0-9]{1,9}")


def _gpu_order(kv: Any) -> Any:
    return (len(kv[0]), kv[0])


class _DiagText:
    """The state of one ``dcgmi diag`` table read line by line (a DCGM 3.x or 4.x layout)."""

    def __init__(self, source: Optional[str], errors: List[Dict[str, Any]]) -> None:
        self.source = source
        self.errors = errors
        self.width = 45
        self.section: Optional[str] = None
        self.metadata: Dict[str, str] = {}
        self.tests: List[Dict[str, Any]] = []
        self.current: Optional[Dict[str, Any]] = None
        # The message being assembled from wrapped rows: [test, list of raw segments, gpu or None, is_error]
        self.msg: Optional[List[Any]] = None
        self.all_gpus: List[Dict[str, Any]] = []  # tests whose result applies to "All" GPUs
        self.saw_table = False

    def flush(self) -> None:
        if self.msg is None:
            return
        test, segments, gpu, is_error = self.msg
        self.msg = None
        body = re.sub(r"\s+", " ", "".join(segments)).strip()
        if not body:
            return
        if gpu is not None:
            body = "GPU %s: %s" % (gpu, body)
        test["messages"].append(body)
        if is_error:
            for g in set(_GPU_IN_TEXT.findall(body)) | ({gpu} if gpu is not None else set()):
                test["gpus"][str(g)] = worst(test["gpus"].get(str(g)), "fail")
            test["result"] = worst(test["result"], "fail")

    def segment(self, value: str) -> str:
        v = value[1:] if value.startswith(" ") else value
        return v[: self.width].ljust(self.width) if len(v.rstrip()) <= self.width else v.rstrip() + " "

    def line(self, stripped: str, lineno: int) -> None:
        if stripped.startswith("Error:") or stripped.startswith("Error :"):
            self.flush()
            msg = stripped[6:].strip() or stripped
            self.errors.append(error_record(DOMAIN, "tool_error", msg, self.source, PARSER, lineno))
            return
        m = _SECTION.match(stripped)
        if m:
            self.flush()
            self.section = m.group(1).strip()
            self.saw_table = True
            self.current = None
            return
        if _BORDER.match(stripped):
            if stripped.startswith("+-") and stripped.count("+") >= 3:
                parts = stripped.split("+")
                if len(parts) >= 3 and len(parts[2]) > 10:
                    self.width = len(parts[2]) - 3
            self.saw_table = True
            return
        cells = _cells(stripped)
        if cells is not None:
            self.row(cells[0].strip(), cells[1])

    def row(self, name: str, value: str) -> None:
        vstrip = value.strip()
        self.saw_table = True
        if name == "Diagnostic" and vstrip == "Result":
            return
        if self.section and self.section.lower() == "metadata" and name:
            self.metadata[name] = vstrip
            return
        mm = _MSG_NAME.match(name) if name else None
        if mm:
            self.flush()
            if self.current is None:
                self.current = _new_test(self.section or "Deployment", self.section)
                self.tests.append(self.current)
            self.msg = [self.current, [self.segment(value)], mm.group(2), mm.group(1).lower() == "error"]
        elif name:
            self.flush()
            self.current = _new_test(name, self.section)
            self.tests.append(self.current)
            _apply_result(self.current, vstrip, self.all_gpus)
        elif self.current is not None:
            self.continuation(self.current, value, vstrip)

    def continuation(self, current: Dict[str, Any], value: str, vstrip: str) -> None:
        """A row without a name: per-GPU result, another "Fail - GPU: 1" row, or wrapped message text."""
        pg = _PER_GPU.match(vstrip)
        if pg and self.msg is None:
            current["gpus"][pg.group(1)] = worst(current["gpus"].get(pg.group(1)), _word(pg.group(2)))
        elif self.msg is not None:
            self.msg[1].append(self.segment(value))
        elif _RESULT.match(vstrip):
            _apply_result(current, vstrip, self.all_gpus)

    def result(self) -> Dict[str, Any]:
        device_ids = [d.strip() for d in self.metadata.get("GPU Device IDs Detected", "").split(",") if d.strip()]
        for test in self.all_gpus:
            for i in range(len(device_ids)):
                test["gpus"].setdefault(str(i), test["result"])
        gpus: Dict[str, str] = {}
        for test in self.tests:
            test["issues"] = [_issue(m, None) for m in test["messages"]]
            test["result"] = worst(test["result"], *test["gpus"].values())
            for g, r in test["gpus"].items():
                w = worst(gpus.get(g), r)
                if w is not None:
                    gpus[g] = w
        overall = worst(*(t["result"] for t in self.tests))
        return {
            "level": infer_level(self.tests),
            "layout": _layout(self.metadata, self.tests),
            "overall": None if overall == "skip" else overall,
            "version": self.metadata.get("DCGM Version") or None,
            "driver_version": self.metadata.get("Driver Version Detected") or None,
            "gpu_device_ids": device_ids,
            "tests": self.tests,
            "gpus": dict(sorted(gpus.items(), key=_gpu_order)),
            "errors": self.errors,
        }


def parse_diag(text: str, source: Optional[str] = None) -> Dict[str, Any]:
    """Parse ``dcgmi diag`` text. Returns the dcgm domain (without ``source``/``level`` from the caller).

    Raises ParseError when the text holds neither a diagnostic table nor a dcgmi error message.
    """
    if not isinstance(text, str):
        raise ParseError("dcgmi output is not text", PARSER, source)
    if text.lstrip().startswith("{"):
        try:
            obj = _safejson.loads(text, what="dcgmi JSON")
        except _safejson.JsonBudgetError as exc:  # nested too deep, too large: refused before decoding
            raise ParseError(str(exc), PARSER, source) from None
        except ValueError as exc:
            raise ParseError("invalid JSON: %s" % exc, PARSER, source) from exc
        return parse_diag_json(obj, source)
    errors: List[Dict[str, Any]] = []
    table = _DiagText(source, errors)
    # A malformed row costs that row (a parse entry with its line), never the run's result.
    rec = Records(PARSER, source, DOMAIN, errors)
    for lineno, line in enumerate(text.splitlines(), start=1):
        with rec.at(lineno):
            stripped = line.strip()
            if stripped and not rec.too_long(stripped, lineno):
                table.line(stripped, lineno)
    table.flush()
    if not table.saw_table and not errors:
        raise ParseError("no dcgmi diag table and no dcgmi error message", PARSER, source)
    return table.result()


def _json_status(value: Any) -> Optional[str]:
    return _word(str(value)) if isinstance(value, (str, int)) else None


def _json_messages(result: Dict[str, Any], issues: Optional[List[Dict[str, Any]]] = None) -> List[str]:
    """The message texts of one JSON result; ``issues`` gets each warning/error with DCGM's own severity."""
    out: List[str] = []
    for key in ("warnings", "warning", "errors", "info"):
        items = result.get(key)
        for item in items if isinstance(items, list) else [items]:
            raw = item if isinstance(item, dict) else None
            if raw is not None:
                item = raw.get("warning") or raw.get("error") or raw.get("message") or raw.get("info")
            if isinstance(item, str) and item.strip():
                text = re.sub(r"\s+", " ", item).strip()
                out.append(text)
                if issues is not None and key != "info":
                    gid = result.get("gpu_id", result.get("entity_id"))
                    issues.append(_issue(text, str(gid) if isinstance(gid, (int, str)) else None, raw))
    return out


def parse_diag_json(obj: Any, source: Optional[str] = None) -> Dict[str, Any]:
    """Best effort for ``dcgmi diag -j``: ``{"DCGM GPU Diagnostic" | "DCGM Diagnostic": {"test_categories":
    [{"category", "tests": [{"name", "results": [{"gpu_ids" | "gpu_id" | "entity_id", "status", "warnings"}],
    "test_summary": {"status"}}]}]}}``. No real JSON sample was collected (formats.md 11); unknown keys are ignored.
    """
    if not isinstance(obj, dict):
        raise ParseError("dcgmi JSON is not an object", PARSER, source)
    body = obj.get("DCGM GPU Diagnostic") or obj.get("DCGM Diagnostic") or obj
    cats = body.get("test_categories") if isinstance(body, dict) else None
    if not isinstance(cats, list):
        raise ParseError("no test_categories in dcgmi JSON", PARSER, source)
    tests: List[Dict[str, Any]] = []
    gpus: Dict[str, str] = {}
    for cat in cats:
        if not isinstance(cat, dict):
            continue
        for t in cat.get("tests") or []:
            if not isinstance(t, dict) or not isinstance(t.get("name"), str):
                continue
            test = _new_test(t["name"], cat.get("category") if isinstance(cat.get("category"), str) else None)
            summary = t.get("test_summary")
            if isinstance(summary, dict):
                test["result"] = _json_status(summary.get("status"))
            for r in t.get("results") or []:
                if not isinstance(r, dict):
                    continue
                status = _json_status(r.get("status"))
                test["result"] = worst(test["result"], status)
                ids = r.get("gpu_ids", r.get("gpu_id", r.get("entity_id")))
                for g in _expand_ids(str(ids)) if ids is not None else []:
                    test["gpus"][g] = worst(test["gpus"].get(g), status) or "skip"
                test["messages"].extend(_json_messages(r, test["issues"]))
            for g, res in test["gpus"].items():
                gpus[g] = worst(gpus.get(g), res) or res
            tests.append(test)
    meta = body if isinstance(body, dict) else {}
    version = obj.get("version") or meta.get("version") or meta.get("DCGM Version")
    overall = worst(*(t["result"] for t in tests))
    return {
        "level": infer_level(tests),
        "layout": _layout({"DCGM Version": str(version or "")}, tests),
        "overall": None if overall == "skip" else overall,
        "version": str(version) if version else None,
        "driver_version": meta.get("Driver Version Detected") or obj.get("Driver Version Detected"),
        "gpu_device_ids": [],
        "tests": tests,
        "gpus": dict(sorted(gpus.items(), key=_gpu_order)),
        "errors": [],
    }


def _new_test(name: str, section: Optional[str]) -> Dict[str, Any]:
    return {"name": name, "category": section, "result": None, "gpus": {}, "messages": [], "issues": []}


def _apply_result(test: Dict[str, Any], value: str, all_gpus: List[Dict[str, Any]]) -> None:
    m = _RESULT.match(value)
    if not m:
        return
    result = _word(m.group(1))
    if m.group(3):
        for g in _expand_ids(m.group(3)):
            test["gpus"][g] = worst(test["gpus"].get(g), result)
        test["result"] = worst(test["result"], result)
    else:
        test["result"] = worst(test["result"], result)
        if m.group(2) and test not in all_gpus:
            all_gpus.append(test)


def _layout(metadata: Dict[str, str], tests: List[Dict[str, Any]]) -> Optional[str]:
    version = metadata.get("DCGM Version", "")
    major = version.split(".", 1)[0].strip()
    if _GPU_ID.fullmatch(major):
        return "dcgm4" if int(major) >= 4 else "dcgm3"
    names = [t["name"] for t in tests if t["name"] not in ("Deployment",)]
    if not names:
        return None
    return "dcgm4" if all(n == n.lower() for n in names) else "dcgm3"


def infer_level(tests: List[Dict[str, Any]]) -> Optional[int]:
    """The run level the tests imply (a lower bound: a level's tests can be skipped or cut off)."""
    if not tests:
        return None
    level = 1
    for t in tests:
        name = t["name"].lower()
        cat = (t.get("category") or "").lower()
        if any(k in name for k in _LEVEL4_TESTS):
            level = max(level, 4)
        elif cat == "stress" or name in _LEVEL3_TESTS:
            level = max(level, 3)
        elif cat in _LEVEL2:
            level = max(level, 2)
    return level


def _result(source: Optional[str], level: Optional[int]) -> Dict[str, Any]:
    return {
        "source": source,
        "level": level,
        "layout": None,
        "overall": None,
        "version": None,
        "driver_version": None,
        "gpu_device_ids": [],
        "tests": [],
        "gpus": {},
        "errors": [],
    }


def from_text(text: str, source: str, level: Optional[int], origin: Optional[str] = None) -> Dict[str, Any]:
    """Parse and wrap: a ParseError becomes an error record."""
    result = _result(source, level)
    try:
        parsed = parse_diag(text, origin or source)
    except ParseError as exc:
        result["errors"].append(exc.to_error(DOMAIN))
        return result
    if level is not None:
        parsed["level"] = level
    result.update(parsed)
    return result


def collect(
    capture_dir: Optional[str] = None,
    run_level: int = 1,
    timeout: float = 30.0,
    dcgmi_path: Optional[str] = None,
    extra_args: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """The ``dcgm`` domain from ``capture_dir/dcgmi-diag.txt`` or from running ``dcgmi diag -r N``."""
    if capture_dir:
        path = os.path.join(capture_dir, CAPTURE_FILE)
        try:
            text = read_text(path)
        except ParseError as exc:
            result = _result("capture:" + CAPTURE_FILE, None)
            result["errors"].append(exc.to_error(DOMAIN))
            return result
        if text is None:
            return _result(None, None)
        return from_text(text, "capture:" + CAPTURE_FILE, None, path)
    exe = dcgmi_path or which("dcgmi")
    if not exe or not os.path.exists(exe):
        result = _result(None, run_level)
        result["errors"].append(error_record(DOMAIN, "missing", "dcgmi not found (%s)" % (exe or "PATH"), "dcgmi"))
        return result
    argv = [exe, "diag", "-r", str(int(run_level))] + list(extra_args or [])
    res = run_command(argv, timeout=timeout)
    if res.timed_out:
        result = _result("dcgmi", run_level)
        result["errors"].append(error_record(DOMAIN, "timeout", res.describe(), "dcgmi"))
        return result
    if res.error is not None:
        result = _result("dcgmi", run_level)
        result["errors"].append(error_record(DOMAIN, "tool_error", res.describe(), "dcgmi"))
        return result
    text = res.stdout + ("\n" + res.stderr if res.stderr.strip() else "")
    result = from_text(text, "dcgmi", run_level)
    if res.rc != 0 and not result["tests"] and not any(e["kind"] == "tool_error" for e in result["errors"]):
        result["errors"] = [error_record(DOMAIN, "tool_error", res.describe(), "dcgmi")]
    return result
