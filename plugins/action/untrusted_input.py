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

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible.plugins.action import ActionBase
from ansible.template import is_trusted_as_template
from ansible.utils.unsafe_proxy import wrap_var
from ansible.utils.vars import load_extra_vars

#: Ticket, change and alert ids (same rule as the ticket hook); always re.fullmatch.
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}")
#: Inventory host names.
HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@:+-]{0,252}")
#: Host patterns (gpuops_targets): names, groups, "a,b", "g:!h", "g:&h", wildcards and ranges; no regex (~).
PATTERN = re.compile(r"[A-Za-z0-9_.@:+*!&,\[\]-]{1,4096}")
#: Control characters refused in free text (tab is allowed).
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
MAX_TEXT = 1024

KINDS = ("text", "ids", "hosts", "patterns")

ARGS = {
    "text": {"type": "list", "elements": "str", "default": []},
    "ids": {"type": "list", "elements": "str", "default": []},
    "hosts": {"type": "list", "elements": "str", "default": []},
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


def check(kind: str, name: str, value: Any, known: Optional[set] = None) -> Any:
    """Validate one (already resolved, plain) value of a kind; return the canonical value or raise InputError."""
    if kind == "text":
        return check_text(name, value)
    if kind == "ids":
        return check_id(name, value)
    if kind == "hosts":
        return check_hosts(name, value, known)
    if kind == "patterns":
        return check_pattern(name, value)
    raise InputError("unknown kind %r" % kind)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _requires_connection = False

    def _is_template(self, value: str) -> bool:
        return bool(self._templar.is_possibly_template(value))

    def _extra_var_templates(self) -> Tuple[set, List[str]]:
        """(names of the extra vars, 'name.path' of each extra var holding a trusted template)."""
        extra = load_extra_vars(self._loader) or {}
        bad = []
        for name, value in extra.items():
            bad += [
                "%s%s" % (name, "" if p == "." else ("." + p if not p.startswith("[") else p))
                for p in template_paths(value, self._is_template)
            ]
        return set(extra), sorted(bad)

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGS)
        if not _FACT.fullmatch(args["fact"]):
            result.update(
                failed=True, msg="untrusted_input: fact must be a private name (__name), got %r" % args["fact"]
            )
            return result
        names = {kind: args[kind] for kind in KINDS}
        bad_names = [n for kind in KINDS for n in names[kind] + args["required"] if not _VAR.fullmatch(n)]
        if bad_names:
            result.update(failed=True, msg="untrusted_input: not variable names: %s" % ", ".join(bad_names))
            return result
        extra_names, extra_templates = self._extra_var_templates()
        named = {n for kind in KINDS for n in names[kind]}
        if not args["all_extra_vars"]:  # an operator's own -e template (e.g. windows read from a file) stays usable
            extra_templates = [t for t in extra_templates if re.split(r"[.\[]", t, maxsplit=1)[0] in named]
        if extra_templates:
            result.update(
                failed=True,
                refused=extra_templates,
                msg="untrusted_input: extra vars %s hold template syntax ({{ }}, {%% %%}, {# #}); outside text is "
                "data, never a template: refused, nothing was done (pass literal text; the ticket hook, the EDA "
                "rulebook and AWX surveys mark it !unsafe)" % ", ".join(extra_templates),
            )
            return result
        groups = task_vars.get("groups") or {}
        known = set(groups.get("all") or []) | {"localhost"} if groups else None
        errors: List[str] = []
        out: Dict[str, Any] = {}
        for kind in KINDS:
            for name in names[kind]:
                if name not in task_vars or task_vars[name] is None:
                    if name in args["required"]:
                        errors.append("%s is required" % name)
                    continue
                raw = task_vars[name]
                try:
                    if template_paths(raw, self._is_template):
                        if name in extra_names:
                            raise InputError("%s holds template syntax; outside text is data, never a template" % name)
                        # an author's template (role default, play or inventory variable): render it once; the
                        # outside values it may reference were checked above and are inert
                        raw = self._templar.template(raw)
                    value = check(kind, name, raw, known)
                except InputError as exc:
                    errors.append(str(exc))
                    continue
                if name in args["required"] and value in ("", []):
                    errors.append("%s is required" % name)
                    continue
                out[name] = wrap_var(value)
        if errors:
            result.update(failed=True, msg="untrusted_input: refused: %s" % "; ".join(errors), refused=errors)
            return result
        result.update(changed=False, ansible_facts={args["fact"]: out})
        return result
