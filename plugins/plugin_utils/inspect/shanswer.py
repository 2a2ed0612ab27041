# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shell capture's wire format (``_shcapture``): what goes into the node's script (every value one single-quoted
word, :func:`quote`), and what comes back (the node's framed output, :func:`parse_output`).

The node's answer is data from outside, and a hostile node knows the run's marker token (it received the script),
so it can frame anything it likes. Two bounds hold whatever it sends:

- size: the answer is refused whole when it is over ``max_bytes`` (:func:`answer_size_error`; the node's script cuts
  its own output one byte past the cap with ``head -c`` when the node has it, so an honest node with a huge tool
  output sends little more than the cap; ansible-core's connection still reads whatever a hostile node sends, the
  collection only keeps and parses it when it is within the cap);
- time: :func:`parse_output` reads the answer in one pass, each character once (markers found left to right, a
  section's body sliced once when its end marker comes), so an answer of unterminated sections costs what its
  length costs, never a scan to the end per section.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpuops.cluster.plugins.module_utils._runner import CommandResult

#: ``timeout`` exits 124 when the limit passed (125-127: it could not run the tool); 137 = killed after ``-k``
TIMED_OUT_RC = (124, 137)
#: what a node's shell capture may send back by default (collect_info ``capture_max_bytes``): a 8-GPU node sends
#: ~0.2 MB; the capture files made from it are bounded by the same 64 MiB (``_livetree.MAX_BYTES``)
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MIN_MAX_BYTES = 4096
MAX_MAX_BYTES = 1024 * 1024 * 1024
#: a marker line longer than this is malformed (``M hostname <name>``, ``E <section> <rc> <id>``: a few dozen)
MAX_MARKER_LINE = 4096
#: how much of the answer is encoded at once to count its bytes
_CHUNK = 1024 * 1024


class ShellCaptureError(ValueError):
    """An option that cannot go into the node's script (the message says which and why)."""


def quote(text: str) -> str:
    """``text`` as one single-quoted shell word (a ``'`` inside becomes ``'\\''``). NUL cannot be passed."""
    if "\0" in text:
        raise ShellCaptureError("a NUL byte cannot be passed to the node's shell")
    return "'" + text.replace("'", "'\\''") + "'"


def check_max_bytes(value: Any) -> int:
    """``capture_max_bytes`` as an int in [MIN_MAX_BYTES, MAX_MAX_BYTES]; None means :data:`DEFAULT_MAX_BYTES`."""
    if value is None:
        return DEFAULT_MAX_BYTES
    try:
        cap = int(value) if not isinstance(value, (bool, float)) else None
    except (TypeError, ValueError):
        cap = None
    if cap is None or not MIN_MAX_BYTES <= cap <= MAX_MAX_BYTES:
        raise ShellCaptureError(
            "capture_max_bytes must be a whole number of bytes from %d to %d, not %r"
            % (MIN_MAX_BYTES, MAX_MAX_BYTES, value)
        )
    return cap


def answer_bytes(stdout: str, limit: int) -> int:
    """The UTF-8 length of the node's answer as the node sent it (ansible-core decodes with surrogateescape), counted
    up to the first chunk past ``limit`` (never a copy of the whole answer)."""
    if len(stdout) > limit:  # at least one byte per character
        return len(stdout)
    if stdout.isascii():
        return len(stdout)
    total = 0
    for start in range(0, len(stdout), _CHUNK):
        chunk = stdout[start : start + _CHUNK]
        try:
            total += len(chunk.encode("utf-8", "surrogateescape"))
        except UnicodeEncodeError:
            total += len(chunk.encode("utf-8", "surrogatepass"))
        if total > limit:
            break
    return total


def answer_size_error(stdout: str, max_bytes: int) -> Optional[str]:
    """Why the node's answer is not read (over ``max_bytes``), or None."""
    if answer_bytes(stdout, max_bytes) > max_bytes:
        return (
            "the node's shell capture sent more than capture_max_bytes (%d bytes): its answer is not read; "
            "a tool printed more than a capture holds (see the node), or the node is not to be trusted" % max_bytes
        )
    return None


class Output:
    """The node's framed output: ``sections`` {name: (text, rc, stderr id)} (the last of a name wins), ``stderr``
    {id: text}, ``meta`` {key: value}, ``complete`` (the end marker came), ``problems`` (cut or malformed)."""

    def __init__(self) -> None:
        self.sections: Dict[str, Tuple[str, str, str]] = {}
        self.stderr: Dict[str, str] = {}
        self.meta: Dict[str, List[str]] = {}
        self.complete = False
        self.problems: List[str] = []

    def first(self, key: str) -> Optional[str]:
        """The first ``M key value`` line's value, stripped; None when absent or empty."""
        return (self.meta.get(key) or [""])[0].strip() or None

    @property
    def timeout_used(self) -> bool:
        """The node ran its tools under ``timeout`` (so exit 124/137 means timed out)."""
        return self.first("timeout") == "yes"


def parse_output(stdout: str, token: str) -> Output:
    """Split the node's output into its sections. Never raises for bad output.

    Every section is ``<marker> B <name>\\n<body>\\n<marker> E <name> <rc> <stderr id>\\n``; ``<marker> M <key>
    <value>`` lines carry the node's facts, ``<marker> Z`` ends the answer; anything before the first marker (a login
    banner) is not ours. One pass: the next marker is looked for from where the last one ended, so every character
    is looked at once; a section whose end marker does not come next (cut, or another marker inside it) is dropped
    and named in ``problems``."""
    out = Output()
    marker = "@@gpuops:" + token + " "
    text = stdout if isinstance(stdout, str) else ""
    open_name: Optional[str] = None  # the section being read, and where its body starts
    body_start = 0
    pos = text.find(marker)
    while pos != -1:
        eol = text.find("\n", pos, pos + MAX_MARKER_LINE)
        if eol == -1:
            if open_name is not None:
                out.problems.append("the section %s does not end (the output was cut)" % open_name)
                open_name = None
            if len(text) - pos >= MAX_MARKER_LINE:
                out.problems.append("a marker line over %d characters" % MAX_MARKER_LINE)
                pos = text.find(marker, pos + MAX_MARKER_LINE)
                continue
            out.problems.append("the output ends inside a marker line")
            break
        head = text[pos + len(marker) : eol].split(" ")
        kind = head[0]
        if open_name is not None:
            if kind == "E" and len(head) >= 3 and head[1] == open_name and text[pos - 1 : pos] == "\n":
                body = text[body_start : pos - 1]
                rc, err_id = (" ".join(head[2:]).split() + ["", ""])[:2]
                if open_name.startswith("stderr:"):
                    out.stderr[open_name.split(":", 1)[1]] = body
                else:
                    out.sections[open_name] = (body, rc, err_id)
                open_name = None
                pos = text.find(marker, eol + 1)
                continue
            # another marker before this section's end: the section was cut (or is forged)
            out.problems.append("the section %s does not end (the output was cut)" % open_name)
            open_name = None
        if kind == "Z":
            out.complete = True
            break
        if kind == "M" and len(head) >= 2:
            out.meta.setdefault(head[1], []).append(" ".join(head[2:]))
        elif kind == "B" and len(head) == 2:
            open_name, body_start = head[1], eol + 1
        else:
            out.problems.append("an unexpected marker line: %r" % text[pos : min(eol, pos + 120)])
        pos = text.find(marker, eol + 1)
    if open_name is not None:
        out.problems.append("the section %s does not end (the output was cut)" % open_name)
    if not out.complete and not out.problems:
        out.problems.append("the node's output ended before the capture did")
    return out


def section_result(argv: List[str], section: Optional[Tuple[str, str, str]], out: Output) -> CommandResult:
    """A section as the ``_runner.CommandResult`` the Python capture would have recorded."""
    res = CommandResult(argv)
    if section is None:
        res.error = "not in the node's answer"
        return res
    body, rc, err_id = section
    res.stdout = body
    res.stderr = out.stderr.get(err_id, "")
    if rc == "nf":
        res.error = "%s not found on PATH" % argv[0]
    elif rc.isdigit():
        res.rc = int(rc)
        if out.timeout_used and res.rc in TIMED_OUT_RC:
            res.rc, res.timed_out = None, True
    else:
        res.error = "no exit status (%r)" % rc[:20]
    return res
