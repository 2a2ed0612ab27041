# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin gpuops.cluster.untrusted_input: outside text (tickets, reasons, node lists, alert ids) becomes
inert data under a private fact name, or the play stops naming the variable.

Why an action plugin: it reads the *raw* variables (task_vars hold them untemplated), so a hostile extra var
is never rendered on the way in, and it returns them with trust removed (``wrap_var``), so no later template
renders them either. In ansible-core 2.19 extra vars given on the command line (``-e``, ``-e @file``) are
trusted templates; set_fact cannot override them (highest precedence), so the sanitized copies live under
another name and the raw name is not referenced in a template afterwards.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ansible import context
from ansible.parsing.splitter import parse_kv, split_args
from ansible.parsing.quoting import unquote
from ansible.template import is_trusted_as_template
from ansible.utils.unsafe_proxy import wrap_var
from ansible.utils.vars import load_extra_vars

from ansible_collections.gpuops.cluster.plugins.plugin_utils._action import ControllerAction, StepError

#: Ticket, change and alert ids (same rule as the ticket hook); always re.fullmatch.
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}")
#: Inventory host names.
HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,252}")
#: Host patterns (gpuops_targets): names, groups, "a,b", "g:!h", "g:&h", wildcards and ranges; no regex (~).
PATTERN = re.compile(r"[A-Za-z0-9_.@:+*!&,\[\]-]{1,4096}")
#: One target host (kind ``targets``): a host name, no pattern character (``* : ! & , [ ] ~ @``).
TARGET = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,252}")
#: The extra var with which an operator lets ``targets`` be a group or pattern (never set by the ticket hook,
#: the EDA rulebook or an AWX survey).
ALLOW_PATTERNS = "gpuops_allow_target_patterns"
#: Key names in a ``key=value`` -e argument (parse_kv's rule for where a new key starts).
_KV_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
#: Control characters refused in free text (tab is allowed).
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
MAX_TEXT = 1024

KINDS = ("text", "ids", "hosts", "targets", "patterns")

ARGS = {
    "text": {"type": "list", "elements": "str", "default": []},
    "ids": {"type": "list", "elements": "str", "default": []},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "targets": {"type": "list", "elements": "str", "default": []},
    "patterns": {"type": "list", "elements": "str", "default": []},
    "required": {"type": "list", "elements": "str", "default": []},
    "fact": {"type": "str", "required": True},
    "all_extra_vars": {"type": "bool", "default": False},
}
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FACT = re.compile(r"__[A-Za-z0-9_]+")


class InputError(ValueError):
    """One or more inputs are refused; the message names each variable."""


def template_paths(value: Any, is_template, path: str = "", depth: int = 0) -> List[str]:
    """Where in `value` a *trusted* string looks like a template (the paths, "" = the value itself)."""
    if depth > 20:
        return [path or "."]
    if isinstance(value, str):
        return [path or "."] if is_trusted_as_template(value) and is_template(value) else []
    out: List[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += template_paths(v, is_template, "%s.%s" % (path, k) if path else str(k), depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            out += template_paths(v, is_template, "%s[%d]" % (path, i), depth + 1)
    return out


def check_text(name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InputError("%s must be a string, got %s" % (name, type(value).__name__))
    text = str(value)
    if len(text) > MAX_TEXT:
        raise InputError("%s is longer than %d characters" % (name, MAX_TEXT))
    if CONTROL.search(text):
        raise InputError("%s contains control characters (one line of text)" % name)
    return text


def check_id(name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not ID.fullmatch(str(value)):
        raise InputError("%s %r is not an id (letters, digits and _.@+-, at most 128)" % (name, value))
    return str(value)


def check_hosts(name: str, value: Any, known: Optional[set]) -> List[str]:
    if isinstance(value, str):  # "a,b" or one per line (an AWX survey's text answer)
        value = [v for v in re.split(r"[,\s]+", value) if v]
    if not isinstance(value, (list, tuple)):
        raise InputError("%s must be a list of inventory host names" % name)
    bad = [v for v in value if not isinstance(v, str) or not HOST.fullmatch(v)]
    if bad:
        raise InputError("%s: bad host names %s" % (name, ", ".join(repr(b) for b in bad)))
    if known is not None:
        unknown = [v for v in value if v not in known]
        if unknown:
            raise InputError("%s: not in the inventory: %s" % (name, ", ".join(unknown)))
    return [str(v) for v in value]


def check_pattern(name: str, value: Any) -> str:
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        value = ",".join(value)
    if not isinstance(value, str) or not PATTERN.fullmatch(value):
        raise InputError(
            "%s %r is not a host pattern (names, groups, ',', ':!', ':&', '*', ranges; no '~' regex)" % (name, value)
        )
    return value


def check_targets(
    name: str, value: Any, known: Optional[set], groups: Iterable[str] = (), allow_patterns: bool = False
) -> str:
    """Targets (gpuops_targets) from outside: inventory host names only, "a,b" or a list; the canonical value is
    the comma-joined names. A group, the implicit localhost or anything with a pattern character is refused
    unless the operator passed ``-e gpuops_allow_target_patterns=true`` (then: check_pattern)."""
    if allow_patterns:
        return check_pattern(name, value)
    if isinstance(value, (list, tuple)):
        names = list(value)
    elif isinstance(value, str):
        names = value.split(",")
    else:
        raise InputError('%s must be inventory host names ("a,b" or a list), got %s' % (name, type(value).__name__))
    if not names or any(n == "" for n in names):
        raise InputError("%s %r: name one or more inventory hosts, separated by commas" % (name, value))
    hint = (
        "targets from outside are inventory hosts, never a group or pattern; an operator who means one passes "
        "-e %s=true on the command line" % ALLOW_PATTERNS
    )
    bad = [n for n in names if not isinstance(n, str) or not TARGET.fullmatch(n)]
    if bad:
        raise InputError("%s: not host names: %s (%s)" % (name, ", ".join(repr(b) for b in bad), hint))
    group_names = sorted(set(names) & set(groups))
    if group_names:
        raise InputError(
            "%s: %s %s a group (%s)" % (name, ", ".join(group_names), "is" if len(group_names) == 1 else "are", hint)
        )
    if known is not None:
        unknown = [n for n in names if n not in known]
        if unknown:
            raise InputError("%s: not in the inventory: %s" % (name, ", ".join(unknown)))
    return ",".join(names)


def flag(value: Any) -> bool:
    """An operator's yes: JSON/YAML true, or true/yes/1 as -e key=value gives it (a string)."""
    if isinstance(value, bool):
        return value
    return isinstance(value, (str, int)) and str(value).strip().lower() in ("true", "yes", "1")


def cut_extra_vars(cli_extra_vars: Iterable[Any]) -> List[Tuple[List[str], Dict[str, str]]]:
    """Each ``-e key=value`` argument Ansible cut at a space: (its keys, what the operator most likely meant).

    ``-e 'isolate_reason=Xid 79'`` is split by parse_kv into ``isolate_reason='Xid'`` and ``_raw_params='79'``
    (the words without a key); the meaning given here puts each such word back after the key before it."""
    out = []
    for opt in cli_extra_vars or ():
        if not isinstance(opt, str) or not opt or opt.startswith("@") or opt[0] in "[{":
            continue  # a file or YAML/JSON: nothing is split at spaces
        try:
            if "_raw_params" not in parse_kv(opt):
                continue
            tokens = split_args(opt)
        except Exception:  # noqa: BLE001 - Ansible itself reported an unparseable -e before we run
            continue
        meant: Dict[str, str] = {}
        key = None
        for tok in tokens:
            m = _KV_KEY.match(tok)
            if m:
                key = m.group(1)
                meant[key] = unquote(tok[m.end() :])
            elif key is not None:
                meant[key] += " " + unquote(tok)
        out.append((list(meant), meant))
    return out


def raw_params_error(cli_extra_vars: Iterable[Any], extra: Dict[str, Any]) -> Optional[str]:
    """The refusal for extra vars holding ``_raw_params`` (a key=value -e cut at a space), None when none does."""
    if "_raw_params" not in extra:
        return None
    cut = cut_extra_vars(cli_extra_vars)
    if not cut:
        return (
            "untrusted_input: the extra vars hold _raw_params: a -e key=value argument was cut at a space and its "
            'words after the space were dropped; give text with spaces as JSON, e.g. -e \'{"isolate_reason": '
            '"Xid 79"}\'; nothing was done'
        )
    parts = []
    for keys, meant in cut:
        parts.append(
            "-e %s=... was cut at a space (Ansible kept only its first word and left the rest in _raw_params): "
            "give it as JSON: -e '%s'" % (keys[0] if len(keys) == 1 else "/".join(keys) or "?", json.dumps(meant))
        )
    return "untrusted_input: refused: %s; nothing was done" % "; ".join(parts)


def check(
    kind: str,
    name: str,
    value: Any,
    known: Optional[set] = None,
    groups: Iterable[str] = (),
    allow_patterns: bool = False,
) -> Any:
    """Validate one (already resolved, plain) value of a kind; return the canonical value or raise InputError."""
    if kind == "text":
        return check_text(name, value)
    if kind == "ids":
        return check_id(name, value)
    if kind == "hosts":
        return check_hosts(name, value, known)
    if kind == "targets":
        return check_targets(name, value, known, groups, allow_patterns)
    if kind == "patterns":
        return check_pattern(name, value)
    raise InputError("unknown kind %r" % kind)


class ActionModule(ControllerAction):
    NAME = "untrusted_input"
    ARGUMENT_SPEC = ARGS

    def _is_template(self, value: str) -> bool:
        return bool(self._templar.is_possibly_template(value))

    def _extra_var_templates(self, extra: Dict[str, Any]) -> Tuple[set, List[str]]:
        """(names of the extra vars, 'name.path' of each extra var holding a trusted template)."""
        bad = []
        for name, value in extra.items():
            bad += [
                "%s%s" % (name, "" if p == "." else ("." + p if not p.startswith("[") else p))
                for p in template_paths(value, self._is_template)
            ]
        return set(extra), sorted(bad)

    def _check_all(
        self,
        names: Dict[str, List[str]],
        required: List[str],
        task_vars: Dict[str, Any],
        extra: Dict[str, Any],
        errors: List[str],
    ) -> Dict[str, Any]:
        """{name: inert value} of every named variable that is set; each refusal appended to ``errors``."""
        groups = task_vars.get("groups") or {}
        known = set(groups.get("all") or []) | {"localhost"} if groups else None
        # targets: hosts of the inventory (not the implicit localhost), never a group or pattern when they come
        # from outside (an extra var), unless the operator says so; an inventory or play variable is theirs
        inventory_hosts = set(groups.get("all") or []) if groups else None
        allow_patterns = ALLOW_PATTERNS in extra and flag(extra[ALLOW_PATTERNS])
        out: Dict[str, Any] = {}
        for kind in KINDS:
            for name in names[kind]:
                if name not in task_vars or task_vars[name] is None:
                    if name in required:
                        errors.append("%s is required" % name)
                    continue
                raw = task_vars[name]
                try:
                    if template_paths(raw, self._is_template):
                        if name in extra:
                            raise InputError("%s holds template syntax; outside text is data, never a template" % name)
                        # an author's template (role default, play or inventory variable): render it once; the
                        # outside values it may reference were checked above and are inert
                        raw = self._templar.template(raw)
                    if kind == "targets":
                        value = check_targets(name, raw, inventory_hosts, groups, allow_patterns or name not in extra)
                    else:
                        value = check(kind, name, raw, known)
                except InputError as exc:
                    errors.append(str(exc))
                    continue
                if name in required and value in ("", []):
                    errors.append("%s is required" % name)
                    continue
                out[name] = wrap_var(value)
        return out

    def step(self, args, check_mode, task_vars):
        if not _FACT.fullmatch(args["fact"]):
            raise StepError("fact must be a private name (__name), got %r" % args["fact"])
        names = {kind: args[kind] for kind in KINDS}
        bad_names = [n for kind in KINDS for n in names[kind] + args["required"] if not _VAR.fullmatch(n)]
        if bad_names:
            raise StepError("not variable names: %s" % ", ".join(bad_names))
        extra = load_extra_vars(self._loader) or {}
        cut = raw_params_error(context.CLIARGS.get("extra_vars") or (), extra)
        if cut:
            return {"failed": True, "refused": ["_raw_params"], "msg": cut}
        _extra_names, extra_templates = self._extra_var_templates(extra)
        named = {n for kind in KINDS for n in names[kind]}
        if not args["all_extra_vars"]:  # an operator's own -e template (e.g. windows read from a file) stays usable
            extra_templates = [t for t in extra_templates if re.split(r"[.\[]", t, maxsplit=1)[0] in named]
        if extra_templates:
            raise StepError(
                "extra vars %s hold template syntax ({{ }}, {%% %%}, {# #}); outside text is data, never a template: "
                "refused, nothing was done (pass literal text; the ticket hook, the EDA rulebook and AWX surveys mark "
                "it !unsafe)" % ", ".join(extra_templates),
                refused=extra_templates,
            )
        errors: List[str] = []
        out = self._check_all(names, args["required"], task_vars, extra, errors)
        if errors:
            raise StepError("refused: %s" % "; ".join(errors), refused=errors)
        return {"changed": False, "ansible_facts": {args["fact"]: out}}
