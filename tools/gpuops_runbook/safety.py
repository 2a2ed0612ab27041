"""The hook's trust boundary: outside text is data.

- ``check_data``: every value of a payload that may reach Ansible is plain JSON data (str/int/float/bool/None,
  lists, mappings with identifier keys), bounded in depth and size, strings without NUL/control characters.
- ``dump_unsafe_yaml``: the extra-vars file the hook hands to ansible-playbook (``-e @file``), every string
  tagged ``!unsafe`` (recursively, mapping keys are identifiers), so Ansible never templates any of it.
- ``HookConfig``: who may request and approve which runbook class, and the roots that payload paths must
  stay under (``--config`` / ``$GPUOPS_RUNBOOK_CONFIG``; docs/operations.md "Ticket hook").
- ``same_person`` / ``confine``: approver != requester (case-, width- and whitespace-insensitive) and
  realpath confinement of report/state paths.
- ``private_dir`` / ``write_private``: files 0600 and directories 0700 whatever the umask (the files through the
  collection's own atomic writer, found on the collections path).
"""

from __future__ import annotations

import json
import math
import os
import re
import unicodedata
from typing import Any, Dict, Iterable, List, Optional

import yaml

from gpuops_runbook import collection

#: Mapping keys of payload data (extra_vars values, approval): identifiers only.
KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: C0 controls (except tab, newline) and DEL: never in a payload string.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: A name in the config's pass_env.
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
MAX_DEPTH = 6
MAX_STRING = 4096
MAX_ITEMS = 1000

DEFAULT_CONFIG = "/etc/gpuops/runbook-hook.yml"
CONFIG_SCHEMA = "gpuops.runbook_hook_config/v1"

#: Payload variables that are paths, and the config key naming the roots they must stay under.
PATH_VARS = {
    "gpuops_report_dir": "report_roots",
    "capture_root": "report_roots",
    "capture_dest": "report_roots",
    "gpuops_state_dir": "state_roots",
    "isolate_state_dir": "state_roots",
}


class ConfigError(ValueError):
    """The hook's config file is missing or malformed."""


# ----------------------------------------------------------------------------------------------- payload data
def check_data(value: Any, where: str, errors: List[str], depth: int = 0) -> None:
    """Append to `errors` every reason why `value` is not plain, bounded JSON data."""
    if depth > MAX_DEPTH:
        errors.append("%s: nested deeper than %d levels" % (where, MAX_DEPTH))
        return
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            errors.append("%s: not a finite number" % where)
        return
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            errors.append("%s: longer than %d characters" % (where, MAX_STRING))
        elif _CONTROL.search(value):
            errors.append("%s: contains control characters" % where)
        return
    if isinstance(value, list):
        if len(value) > MAX_ITEMS:
            errors.append("%s: more than %d items" % (where, MAX_ITEMS))
            return
        for i, item in enumerate(value):
            check_data(item, "%s[%d]" % (where, i), errors, depth + 1)
        return
    if isinstance(value, dict):
        if len(value) > MAX_ITEMS:
            errors.append("%s: more than %d keys" % (where, MAX_ITEMS))
            return
        for k, item in value.items():
            if not isinstance(k, str) or not KEY.fullmatch(k):
                errors.append("%s: key %r is not an identifier" % (where, k))
                continue
            check_data(item, "%s.%s" % (where, k), errors, depth + 1)
        return
    errors.append("%s: unsupported type %s" % (where, type(value).__name__))


# ------------------------------------------------------------------------------------------ the extra-vars file
class _Unsafe(str):
    """A string that goes into the extra-vars file tagged !unsafe."""


class _UnsafeDumper(yaml.SafeDumper):
    pass


def _represent_unsafe(dumper: yaml.SafeDumper, data: _Unsafe) -> Any:
    return dumper.represent_scalar("!unsafe", str(data), style='"')


_UnsafeDumper.add_representer(_Unsafe, _represent_unsafe)


def mark_unsafe(value: Any) -> Any:
    """Every string (values, recursively) -> _Unsafe; mapping keys must be identifiers (checked, kept plain)."""
    if isinstance(value, str):
        return _Unsafe(value)
    if isinstance(value, (list, tuple)):
        return [mark_unsafe(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or not KEY.fullmatch(k):
                raise ValueError("extra var key %r is not an identifier" % (k,))
            out[k] = mark_unsafe(v)
        return out
    return value


def dump_unsafe_yaml(extravars: Dict[str, Any]) -> str:
    """YAML for ``ansible-playbook -e @file``: each string scalar is ``!unsafe "..."`` (never templated)."""
    return "---\n" + yaml.dump(
        mark_unsafe(extravars), Dumper=_UnsafeDumper, default_flow_style=False, allow_unicode=False, width=4096
    )


# ----------------------------------------------------------------------------------------------- private files
def private_dir(path: str) -> str:
    """mkdir -p with 0700 on every directory this creates, and 0700 on `path` itself."""
    parent = os.path.dirname(os.path.abspath(path))
    if parent and not os.path.isdir(parent):
        private_dir(parent)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    os.chmod(path, 0o700)
    return path


def write_private(path: str, text: str) -> None:
    """Atomically write `text` to `path`, 0600 whatever the umask: the collection's own private atomic writer
    (plugins/module_utils/_files.py ``write_private_atomic``). Without the collection on the collections path
    this raises collection.CollectionNotFound and writes nothing."""
    collection.files().write_private_atomic(path, text, 0o600)


# ------------------------------------------------------------------------------------------------ people, paths
def person(name: Any) -> str:
    """Canonical form of a person's name for comparisons: NFKC, casefolded, without any whitespace."""
    return "".join(unicodedata.normalize("NFKC", str(name or "")).casefold().split())


def same_person(a: Any, b: Any) -> bool:
    pa, pb = person(a), person(b)
    return bool(pa) and pa == pb


def confine(path: str, roots: Iterable[str]) -> Optional[str]:
    """realpath(path) when it lies under realpath(one of roots), else None."""
    if not isinstance(path, str) or not path or "\x00" in path or not os.path.isabs(path):
        return None
    real = os.path.realpath(path)
    for root in roots:
        r = os.path.realpath(root)
        try:
            if os.path.commonpath([real, r]) == r:
                return real
        except ValueError:
            continue
    return None


# ----------------------------------------------------------------------------------------------------- config
class HookConfig:
    """Allowlists per runbook class (or runbook id) and path roots.

    ``requesters`` / ``approvers``: mapping of a change class (corrective, planned, read_only) or a runbook id
    to a list of names; ``"*"`` in a list admits anyone (a name is still required). A runbook id key wins
    over its class. ``report_roots`` / ``state_roots``: directories payload paths must stay under.
    ``pass_env``: names of the hook's environment variables the playbook also gets, besides the built-in
    allowlist (gpuops_runbook/secretenv.py: PATH, HOME, the locale, ANSIBLE_*, GPUOPS_*, PG*, proxies, CA files).
    """

    def __init__(self, data: Dict[str, Any], path: str = "<config>"):
        self.path = path
        problems = self.validate(data)
        if problems:
            raise ConfigError("runbook hook config %s: %s" % (path, "; ".join(problems)))
        self.requesters = {k: [str(n) for n in v] for k, v in (data.get("requesters") or {}).items()}
        self.approvers = {k: [str(n) for n in v] for k, v in (data.get("approvers") or {}).items()}
        self.roots = {
            key: [os.path.realpath(r) for r in (data.get(key) or [])] for key in ("report_roots", "state_roots")
        }
        self.pass_env = [str(n) for n in (data.get("pass_env") or [])]

    @staticmethod
    def validate(data: Any) -> List[str]:
        if not isinstance(data, dict):
            return ["top level must be a mapping"]
        problems = []
        unknown = sorted(set(data) - {"schema", "requesters", "approvers", "report_roots", "state_roots", "pass_env"})
        if unknown:
            problems.append("unknown keys %s" % ", ".join(unknown))
        if data.get("schema", CONFIG_SCHEMA) != CONFIG_SCHEMA:
            problems.append("schema must be %s" % CONFIG_SCHEMA)
        for key in ("requesters", "approvers"):
            val = data.get(key) or {}
            if not isinstance(val, dict) or not all(
                isinstance(k, str) and isinstance(v, list) and all(isinstance(n, str) and n.strip() for n in v)
                for k, v in val.items()
            ):
                problems.append("`%s` must map a runbook class or id to a list of names" % key)
        for key in ("report_roots", "state_roots"):
            val = data.get(key) or []
            if not isinstance(val, list) or not all(isinstance(r, str) and os.path.isabs(r) for r in val):
                problems.append("`%s` must be a list of absolute directories" % key)
        names = data.get("pass_env") or []
        if not isinstance(names, list) or not all(isinstance(n, str) and _ENV_NAME.fullmatch(n) for n in names):
            problems.append("`pass_env` must be a list of environment variable names")
        return problems

    def _allowed(self, table: Dict[str, List[str]], entry: Dict[str, Any]) -> List[str]:
        if entry.get("id") in table:
            return table[entry["id"]]
        return table.get(entry.get("change_class", ""), [])

    def may(self, role: str, name: Any, entry: Dict[str, Any]) -> bool:
        """Whether `name` may be the requester/approver (`role`) of `entry`."""
        allowed = self._allowed(self.requesters if role == "requester" else self.approvers, entry)
        if not person(name):
            return False
        return "*" in allowed or any(same_person(name, a) for a in allowed)

    def describe(self, role: str, entry: Dict[str, Any]) -> str:
        allowed = self._allowed(self.requesters if role == "requester" else self.approvers, entry)
        return ", ".join(allowed) if allowed else "nobody"


def load_config(path: Optional[str]) -> HookConfig:
    """Read the hook config (YAML or JSON); raise ConfigError when it is missing or malformed."""
    path = path or os.environ.get("GPUOPS_RUNBOOK_CONFIG") or DEFAULT_CONFIG
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ConfigError(
            "cannot read the runbook hook config %s (--config / $GPUOPS_RUNBOOK_CONFIG): %s; it names who may "
            "request and approve each runbook class, nothing runs without it" % (path, exc.strerror or exc)
        )
    try:
        data = yaml.safe_load(text) if not text.lstrip().startswith("{") else json.loads(text)
    except (yaml.YAMLError, ValueError) as exc:
        raise ConfigError("runbook hook config %s is not valid YAML/JSON: %s" % (path, exc))
    return HookConfig(data if data is not None else {}, path)
