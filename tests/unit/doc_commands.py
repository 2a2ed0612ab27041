# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find every command the documentation tells an operator to type, and check it the way Ansible would read it.

Used by tests/unit/test_documented_commands.py. Sources: README.md, docs/*.md, runbooks/*.md, roles/*/README.md,
extensions/eda/README.md (fenced code blocks, with ``\\`` continuations, and inline code spans) and the header
comments of playbooks/*.yml. A command is an ``ansible-playbook``, ``ansible-runner``, ``gpuops-runbook`` or
``ansible-doc`` invocation; it is split with the shell's rules (shlex) and its options parsed by ansible-core's
own ``PlaybookCLI`` and ``load_extra_vars`` (so ``-e 'isolate_reason=Xid 79'`` is read exactly as Ansible reads
it: ``{'isolate_reason': 'Xid', '_raw_params': '79'}``).
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, Tuple

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = ("ansible-playbook", "ansible-runner", "gpuops-runbook", "ansible-doc")
_CMD_START = re.compile(r"(?:^|[|;&(]\s*|^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+)(%s)(?=\s|$)" % "|".join(TOOLS))
_WORDS = re.compile(r"[^\s=\"',]+")
_IDENT = re.compile(r"\b[a-z_][a-z0-9_]*\b")
_SEPARATORS = {"|", "||", "&&", ";", "&", ")", "("}
FQCN = "gpuops.cluster."


@dataclass
class Command:
    source: str  # path relative to ROOT
    line: int
    text: str  # the command as written (continuations joined)
    argv: List[str] = field(default_factory=list)
    stdin: Optional[str] = None  # `echo '<json>' | gpuops-runbook run`: the echoed text

    @property
    def where(self) -> str:
        return "%s:%d: %s" % (self.source, self.line, self.text)


def doc_sources(root: str = ROOT) -> List[str]:
    pats = ["README.md", "docs/*.md", "runbooks/*.md", "roles/*/README.md", "extensions/eda/README.md"]
    files = [p for pat in pats for p in sorted(glob.glob(os.path.join(root, pat)))]
    return files + sorted(glob.glob(os.path.join(root, "playbooks", "*.yml")))


def _join_continuations(lines: List[Tuple[int, str]]) -> Iterator[Tuple[int, str]]:
    buf, start = "", 0
    for num, line in lines:
        if not buf:
            start = num
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        yield start, buf + stripped
        buf = ""
    if buf:
        yield start, buf


def _markdown_chunks(text: str) -> Iterator[Tuple[int, str]]:
    """Logical lines of fenced code, and inline code spans of prose paragraphs."""
    fence: Optional[List[Tuple[int, str]]] = None
    para: List[Tuple[int, str]] = []

    def spans(par: List[Tuple[int, str]]) -> Iterator[Tuple[int, str]]:
        joined = " ".join(line.strip() for _lineno, line in par)
        for m in re.finditer(r"(`+)(.+?)\1", joined):
            yield par[0][0], m.group(2).strip()

    for num, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            if fence is None:
                yield from spans(para)
                para, fence = [], []
            else:
                yield from _join_continuations(fence)
                fence = None
            continue
        if fence is not None:
            fence.append((num, line))
        elif line.strip():
            para.append((num, line))
        else:
            yield from spans(para)
            para = []
    yield from spans(para)


def _playbook_header(text: str) -> Iterator[Tuple[int, str]]:
    lines = []
    for num, line in enumerate(text.splitlines(), 1):
        if line.startswith("---") and num == 1:
            continue
        if not line.startswith("#"):
            break
        lines.append((num, line.lstrip("#")))
    return _join_continuations(lines)


def _tokens(text: str) -> List[str]:
    lex = shlex.shlex(text, posix=True, punctuation_chars="|;&()")
    lex.whitespace_split = True
    lex.commenters = "#"
    return list(lex)


def extract(path: str, root: str = ROOT) -> Tuple[List[Command], List[str]]:
    """The commands in one file, and the problems met reading them (unbalanced quotes: not pasteable)."""
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    chunks = _playbook_header(text) if path.endswith(".yml") else _markdown_chunks(text)
    commands, problems = [], []
    for num, chunk in chunks:
        m = _CMD_START.search(chunk.strip())
        if not m:
            continue
        chunk = chunk.strip()
        try:
            toks = _tokens(chunk[m.start(1) :])
            before = _tokens(chunk[: m.start(1)])
        except ValueError as exc:
            problems.append("%s:%d: cannot be split as the shell would (%s): %s" % (rel, num, exc, chunk))
            continue
        cut = next((i for i, t in enumerate(toks) if t in _SEPARATORS), len(toks))
        cmd = Command(rel, num, chunk[m.start(1) :].split(" #")[0].strip(), argv=_unbracket(toks[:cut]))
        if len(before) >= 3 and before[0] == "echo" and before[-1] == "|":
            cmd.stdin = before[1]
        if len(cmd.argv) > 1:  # a bare tool name in prose is a mention, not a command
            commands.append(cmd)
    return commands, problems


def _unbracket(toks: List[str]) -> List[str]:
    """`[-e x=1]` (an optional part, as docs write it) -> `-e x=1`; `...` (elided) dropped."""
    out, depth = [], 0
    for tok in toks:
        if tok == "...":
            continue
        if depth == 0 and tok.startswith("[-"):
            depth, tok = 1, tok[1:]
        if depth and tok.endswith("]") and tok.count("]") > tok.count("["):
            depth, tok = 0, tok[:-1]
        out.append(tok)
    return out


# --------------------------------------------------------------------------------------------- what exists
class Collection:
    """Playbooks, roles, variables and plugins of the collection at `root`, read from the files."""

    def __init__(self, root: str = ROOT) -> None:
        self.root = root
        self.playbooks = {os.path.basename(p)[:-4] for p in glob.glob(os.path.join(root, "playbooks", "*.yml"))}
        self.roles = {
            os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(root, "roles", "*", "tasks"))
        }
        self._role_vars: Dict[str, Set[str]] = {}
        self._gpuops: Optional[Set[str]] = None
        self._playbook_vars: Dict[str, Set[str]] = {}

    def _read(self, *parts: str) -> str:
        try:
            with open(os.path.join(self.root, *parts), encoding="utf-8") as fh:
                return fh.read()
        except OSError:
            return ""

    def role_vars(self, role: str) -> Set[str]:
        """Options of every entry point (meta/argument_specs.yml) and every default of the role."""
        if role not in self._role_vars:
            names: Set[str] = set()
            specs = yaml.safe_load(self._read("roles", role, "meta", "argument_specs.yml")) or {}
            for spec in (specs.get("argument_specs") or {}).values():
                names.update((spec or {}).get("options") or {})
            names.update(yaml.safe_load(self._read("roles", role, "defaults", "main.yml")) or {})
            self._role_vars[role] = names
        return self._role_vars[role]

    def roles_used(self, text: str) -> Set[str]:
        """Roles named in `text` (gpuops.cluster.<role>), and the roles those roles use, transitively."""
        todo = {r for r in re.findall(r"gpuops\.cluster\.(\w+)", text) if r in self.roles}
        seen: Set[str] = set()
        while todo:
            role = todo.pop()
            seen.add(role)
            for path in glob.glob(os.path.join(self.root, "roles", role, "tasks", "*.yml")):
                with open(path, encoding="utf-8") as fh:
                    todo |= {r for r in re.findall(r"gpuops\.cluster\.(\w+)", fh.read()) if r in self.roles} - seen
        return seen

    def playbook_vars(self, name: str) -> Set[str]:
        """What a playbook reads: identifiers in its plays (its documented vars, untrusted_input lists, Jinja),
        its vars files, the options and defaults of every role it runs, and the collection's gpuops_* names."""
        if name in self._playbook_vars:
            return self._playbook_vars[name]
        text = "\n".join(
            line for line in self._read("playbooks", name + ".yml").splitlines() if not line.lstrip().startswith("#")
        )
        for vf in re.findall(r"^\s*-\s*(\.\./\S+\.yml)\s*$", text, re.M):
            text += "\n" + self._read("playbooks", vf)
        names = set(_IDENT.findall(text)) | self.gpuops_names()
        for role in self.roles_used(text):
            names |= self.role_vars(role)
        self._playbook_vars[name] = names
        return names

    def ticket_aliases(self) -> Set[str]:
        """`<role>_ticket` role options: accepted, but documented commands use gpuops_ticket."""
        return {v for r in self.roles for v in self.role_vars(r) if v.endswith("_ticket") and v != "gpuops_ticket"}

    def gpuops_names(self) -> Set[str]:
        if self._gpuops is None:
            self._gpuops = set(gpuops_names_in_code(self.root))
        return self._gpuops

    def plugin_exists(self, kind: str, name: str) -> bool:
        if kind == "role":
            return name in self.roles
        if kind == "playbook":
            return name in self.playbooks
        folder = os.path.join(self.root, "plugins", "modules" if kind == "module" else kind)
        if os.path.exists(os.path.join(folder, name + ".py")) or os.path.exists(os.path.join(folder, name + ".yml")):
            return True
        if kind in ("filter", "test"):  # several filters per file: the name is a key of FilterModule.filters()
            return any(re.search(r"[\"']%s[\"']" % re.escape(name), self._read(p)) for p in glob.glob(folder + "/*.py"))
        return False


#: gpuops_* names in the code that are not variables (the store's own identifiers)
NOT_VARIABLES = {
    "gpuops_read": "a SQLAlchemy execution option (plugin_utils/store/engine.py)",
    "gpuops_store_info": "a table of the store's base migration",
}
_CODE_GLOBS = (
    "roles/*/tasks/*.yml",
    "roles/*/defaults/*.yml",
    "roles/*/meta/*.yml",
    "roles/*/templates/*",
    "playbooks/*.yml",
    "plugins/**/*.py",
    "plugins/*/*.yml",
    "plugins/*/*/*.j2",
    "extensions/eda/rulebooks/*.yml",
    "extensions/eda/plugins/*/*.py",
    "awx/*.yml",
    "awx/surveys/*.json",
    "tools/gpuops_runbook/*.py",
)


def gpuops_names_in_code(root: str = ROOT) -> Dict[str, List[str]]:
    """Every `gpuops_*` name the collection's code, roles, playbooks, AWX/EDA data and the ticket hook use,
    with the files that use it (Python: only inside string literals, where variables are read by name)."""
    found: Dict[str, List[str]] = {}
    for pat in _CODE_GLOBS:
        for path in sorted(glob.glob(os.path.join(root, pat), recursive=True)):
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            if path.endswith(".py"):
                text = "\n".join(_python_strings(text))
            for name in set(re.findall(r"\bgpuops_[a-z0-9_]*[a-z0-9]\b", text)) - set(NOT_VARIABLES):
                found.setdefault(name, []).append(os.path.relpath(path, root))
    return found


def _python_strings(text: str) -> List[str]:
    import tokenize

    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return [text]
    fstring = getattr(tokenize, "FSTRING_MIDDLE", None)
    return [t.string for t in toks if t.type == tokenize.STRING or (fstring is not None and t.type == fstring)]


# ------------------------------------------------------------------------------------------------ checks
def check(cmd: Command, coll: Collection) -> List[str]:
    tool = cmd.argv[0]
    problems = paste_problems(cmd.text)
    if tool == "ansible-playbook":
        return problems + _check_playbook(cmd, coll)
    if tool == "gpuops-runbook":
        return problems + _check_hook(cmd, coll)
    if tool == "ansible-doc":
        return problems + _check_doc(cmd, coll)
    return problems + _check_runner(cmd, coll)


def paste_problems(text: str) -> List[str]:
    """What a shell would not run as meant: `<site>` (a redirection), `[-e x=1]` (passed literally), `...`.
    Only outside quotes; `gpuops.cluster.<name>` (the generic form in a table) is a mention, not a command."""
    raw = re.sub(r"'[^']*'|\"[^\"]*\"", "''", text)
    raw = re.sub(r"gpuops\.cluster\.<\w+>", "gpuops.cluster.x", raw)
    problems = []
    if re.search(r"<[^>]*>", raw):
        problems.append("a <placeholder> is a shell redirection: write an example value")
    if re.search(r"(^|\s)\[-", raw):
        problems.append("[optional] parts are passed literally: write the command out")
    if re.search(r"(^|\s)\.\.\.(\s|$)", raw):
        problems.append("'...' is not a command: write it out")
    return problems


def parse_playbook_args(argv: List[str]):
    """ansible-core's own reading of an ansible-playbook command line: (playbooks, extra vars, error)."""
    from ansible import context
    from ansible.cli.playbook import PlaybookCLI
    from ansible.utils.context_objects import CLIArgs
    from ansible.errors import AnsibleError
    from ansible.parsing.dataloader import DataLoader
    from ansible.utils.vars import load_extra_vars

    err = io.StringIO()
    cli = PlaybookCLI(list(argv))
    try:
        with contextlib.redirect_stderr(err):
            cli.init_parser()
            options = cli.parser.parse_args(list(argv[1:]))
    except SystemExit:
        lines = [line for line in err.getvalue().splitlines() if "error:" in line]
        return [], {}, (lines[-1] if lines else err.getvalue().strip()[-200:])
    playbooks = list(options.args)
    if any(str(e).startswith("@") for e in options.extra_vars or ()):
        return playbooks, {}, None  # a vars file: nothing on the line to check
    # ansible's CLIARGS is a process-wide singleton once set by a real CLI: swap in this line's arguments
    saved, context.CLIARGS = context.CLIARGS, CLIArgs.from_options(options)
    load_extra_vars.extra_vars = None  # ansible caches the first parse on the function
    try:
        return playbooks, dict(load_extra_vars(DataLoader())), None
    except AnsibleError as exc:
        return playbooks, {}, "-e cannot be parsed by Ansible: %s" % exc
    finally:
        load_extra_vars.extra_vars = None
        context.CLIARGS = saved


def _check_playbook(cmd: Command, coll: Collection) -> List[str]:
    playbooks, extra, error = parse_playbook_args(cmd.argv)
    if error:
        return ["ansible-playbook rejects it: %s" % error]
    problems, names = [], set()
    for pb in playbooks:
        if pb.startswith(FQCN):
            name = pb[len(FQCN) :]
            if "<" in name:  # `gpuops.cluster.<name>`: the generic form, in a table
                continue
            if name not in coll.playbooks:
                problems.append("no playbook %s (playbooks/%s.yml does not exist)" % (pb, name))
            names |= coll.playbook_vars(name)
        elif pb.startswith("playbooks/") or "/playbooks/" in pb:
            problems.append("%s: use the installed name %s%s" % (pb, FQCN, os.path.basename(pb)[:-4]))
        elif not os.path.isfile(os.path.join(coll.root, pb)):
            problems.append("%s: neither gpuops.cluster.<playbook> nor a file of this repository" % pb)
    problems += extra_var_problems(cmd, extra, names, coll)
    return problems


def extra_var_problems(cmd: Command, extra: Dict, known: Set[str], coll: Collection) -> List[str]:
    problems = words_kept_problems(cmd.argv)
    if "_raw_params" in extra and not problems:
        problems.append(
            "-e lost words: Ansible split a key=value -e on spaces and kept %r apart (use JSON: "
            '-e \'{"name": "several words"}\')' % extra["_raw_params"]
        )
    for name in sorted(extra):
        if name == "_raw_params" or name.startswith("ansible_"):
            continue
        if name in coll.ticket_aliases():
            problems.append("-e %s: documented commands use gpuops_ticket (%s is an alias)" % (name, name))
        elif known and name not in known:
            problems.append("-e %s: no playbook, role or plugin of the collection reads this variable" % name)
    return problems


def extra_var_args(argv: List[str]) -> List[str]:
    out = []
    for i, tok in enumerate(argv):
        if tok in ("-e", "--extra-vars") and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif tok.startswith("--extra-vars="):
            out.append(tok.split("=", 1)[1])
        elif tok.startswith("-e") and len(tok) > 2 and not tok.startswith("--"):
            out.append(tok[2:])
    return out


def words_kept_problems(argv: List[str]) -> List[str]:
    """Every word of every -e value reaches a variable: the keys and values Ansible parses out of a value
    hold the same words as the value the shell passed (free text, e.g. *_reason, keeps all its words)."""
    from ansible.parsing.splitter import parse_kv

    problems = []
    for value in extra_var_args(argv):
        if not value or value[0] in "@[{":
            continue  # JSON/YAML or a file: parsed whole, nothing split
        parsed = parse_kv(value)
        got = sorted(_WORDS.findall(" ".join("%s %s" % (k, v) for k, v in parsed.items() if k != "_raw_params")))
        if got != sorted(_WORDS.findall(value)):
            problems.append(
                '-e %r: lost words: Ansible reads %r (use JSON: -e \'{"name": "several words"}\')'
                % (value, dict(parsed))
            )
    return problems


def multiword_values(cmd: Command) -> Dict[str, str]:
    """The free-text values of a documented ansible-playbook command that hold more than one word."""
    if cmd.argv[0] != "ansible-playbook":
        return {}
    _pb, extra, _err = parse_playbook_args(cmd.argv)
    return {k: v for k, v in extra.items() if isinstance(v, str) and len(v.split()) > 1}


def _check_hook(cmd: Command, coll: Collection) -> List[str]:
    sys.path.insert(0, os.path.join(coll.root, "tools"))
    try:
        from gpuops_runbook import catalog, cli
    finally:
        sys.path.pop(0)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = cli.build_parser().parse_args(cmd.argv[1:])
    except SystemExit:
        return ["gpuops-runbook rejects it: %s" % err.getvalue().strip().splitlines()[-1]]
    data = catalog.load(os.path.join(coll.root, "runbooks", "catalog.yml"))
    if args.cmd == "lookup":
        found = (
            catalog.by_id(data, args.runbook)
            if args.runbook
            else catalog.by_alert(data, args.alert)
            if args.alert
            else catalog.by_finding(data, args.check, args.code)
        )
        return [] if found else ["the catalogue has no entry for this lookup"]
    if args.cmd == "run" and cmd.stdin is not None:
        try:
            payload = json.loads(cmd.stdin)
        except ValueError as exc:
            return ["the echoed ticket payload is not JSON: %s" % exc]
        if payload.get("runbook") and catalog.by_id(data, payload["runbook"]) is None:
            return ["the payload names runbook %r, which the catalogue does not have" % payload["runbook"]]
    return []


def _check_doc(cmd: Command, coll: Collection) -> List[str]:
    kind, names, argv = "module", [], cmd.argv[1:]
    i = 0
    while i < len(argv):
        if argv[i] in ("-t", "--type"):
            kind, i = argv[i + 1], i + 2
            continue
        if not argv[i].startswith("-"):
            names.append(argv[i])
        i += 1
    problems = []
    for name in names:
        if name.startswith(FQCN) and "<" not in name and not coll.plugin_exists(kind, name[len(FQCN) :]):
            problems.append("ansible-doc -t %s %s: the collection has no such %s" % (kind, name, kind))
    return problems


def _check_runner(cmd: Command, coll: Collection) -> List[str]:
    argv, problems = cmd.argv, []
    for i, tok in enumerate(argv):
        if tok in ("-p", "--playbook") and i + 1 < len(argv):
            pb = argv[i + 1]
            name = pb[len(FQCN) :] if pb.startswith(FQCN) else os.path.basename(pb)[:-4]
            if name not in coll.playbooks:
                problems.append("ansible-runner -p %s: no such playbook" % pb)
    return problems
