"""The playbook's environment: an allowlist, and secrets that never rest in a file (issue 35 item 3).

ansible-runner writes the whole environment of the run into ``artifacts/<ident>/command`` (and seeds it from
the hook's own ``os.environ``): with ``GPUOPS_BMC_PASSWORD`` or a ``GPUOPS_DB_URL`` holding a password in the
hook's environment, both were in that file in clear text, under the state directory that backups copy. So:

- :func:`allowed` -- the playbook gets only the variables it needs: :data:`NAMES`, the :data:`PREFIXES`
  (``LC_*``, ``ANSIBLE_*``, ``GPUOPS_*``, ``PG*``) and the hook config's ``pass_env``; everything else of the
  hook's environment is dropped.
- :func:`split` -- of those, a *secret* is one whose name matches the collection's secret-key pattern
  (``plugins/plugin_utils/store/audit.py`` ``SECRET_KEY``: password, token, secret, auth, ...), one of
  :data:`SECRET_NAMES` (``GPUOPS_DB_URL``), one whose value holds URL credentials (``scheme://user:pw@``), or
  one whose value contains a secret's value.
- :func:`child_env` -- the environment ansible-runner records and starts the command with: the plain
  variables and the runner's own (``ANSIBLE_*``, ``AWX_*``, ``RUNNER_*``), no secret.
- :class:`SecretPipe` -- the secrets go to the command through a named pipe (FIFO) in a private temporary
  directory: ``envexec.py`` (ansible-runner's ``binary``) reads them, adds them to its environment and execs
  ansible-playbook. A FIFO holds no data on disk (ansible-runner hands ssh keys to ssh-agent the same way).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from typing import Dict, Iterable, Mapping, Optional, Pattern, Tuple

from gpuops_runbook.envexec import PIPE_VAR

#: The script ansible-runner runs (with this Python) when there are secrets to hand over.
ENVEXEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "envexec.py")

#: Variables of the hook's environment the playbook gets (with PREFIXES and the config's ``pass_env``).
NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "SSH_AUTH_SOCK",
        "KRB5CCNAME",
        "KRB5_CONFIG",
        "LD_LIBRARY_PATH",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONIOENCODING",
        "VIRTUAL_ENV",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "REQUESTS_CA_BUNDLE",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    }
)
PREFIXES = ("LC_", "ANSIBLE_", "GPUOPS_", "PG")
#: Always secret, whatever the value looks like (a database URL may carry its password in the query).
SECRET_NAMES = frozenset({"GPUOPS_DB_URL"})
#: Variables ansible-runner sets for its own callback (kept in the recorded environment unless secret).
RUNNER_PREFIXES = ("ANSIBLE_", "AWX_", "RUNNER_")
RUNNER_NAMES = frozenset({"ORIGINAL_STDOUT_CALLBACK", "AD_HOC_COMMAND_ID", "JOB_ID", "PROJECT_UPDATE_ID"})
#: ``scheme://user:password@host``: credentials in a URL (a proxy, a database).
URL_CREDENTIALS = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@")
#: A secret shorter than this is not looked for inside other values (it would match everywhere).
MIN_SECRET = 4


def allowed(environ: Mapping[str, str], extra: Iterable[str] = ()) -> Dict[str, str]:
    """The variables of ``environ`` the playbook may get: NAMES, PREFIXES and ``extra`` (exact names)."""
    names = NAMES | frozenset(extra)
    return {k: v for k, v in environ.items() if k in names or k.startswith(PREFIXES)}


def is_secret(name: str, value: str, secret_key: Pattern[str]) -> bool:
    return name in SECRET_NAMES or bool(secret_key.search(name)) or bool(URL_CREDENTIALS.search(value or ""))


def split(env: Mapping[str, str], secret_key: Pattern[str]) -> Tuple[Dict[str, str], Dict[str, str]]:
    """(plain, secrets) of ``env``: see the module docstring. A plain variable whose value contains a
    secret's value (``MIN_SECRET`` characters or more) is a secret too."""
    secrets = {k: v for k, v in env.items() if is_secret(k, v, secret_key)}
    values = [v for v in secrets.values() if len(v) >= MIN_SECRET]
    plain = {}
    for k, v in env.items():
        if k in secrets:
            continue
        if any(s in v for s in values):
            secrets[k] = v
        else:
            plain[k] = v
    return plain, secrets


def runner_owned(name: str) -> bool:
    return name.startswith(RUNNER_PREFIXES) or name in RUNNER_NAMES


def child_env(runner_env: Mapping[str, str], plain: Mapping[str, str], secrets: Mapping[str, str]) -> Dict[str, str]:
    """What ansible-runner records and starts the command with: from its prepared environment (the hook's
    ``os.environ`` + ``plain`` + its own settings), the plain variables and the runner's own, no secret."""
    return {
        k: v for k, v in runner_env.items() if (k in plain or runner_owned(k)) and k not in secrets and k != PIPE_VAR
    }


class SecretPipe:
    """``with SecretPipe(secrets) as pipe``: ``pipe.path`` is a FIFO (0600, in a 0700 temporary directory) that
    yields ``json.dumps(secrets)`` once to the first reader; None when there are no secrets. On exit a writer
    still waiting (the command never started) is released and the directory removed."""

    def __init__(self, secrets: Mapping[str, str]):
        self.secrets = dict(secrets)
        self.path: Optional[str] = None
        self._dir: Optional[str] = None
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> SecretPipe:
        if not self.secrets:
            return self
        self._dir = tempfile.mkdtemp(prefix="gpuops-runbook-")
        self.path = os.path.join(self._dir, "secrets")
        os.mkfifo(self.path, 0o600)
        data = json.dumps(self.secrets).encode("utf-8")
        self._thread = threading.Thread(target=self._write, args=(self.path, data), daemon=True)
        self._thread.start()
        return self

    @staticmethod
    def _write(path: str, data: bytes) -> None:
        try:
            fd = os.open(path, os.O_WRONLY)  # blocks until the command opens the pipe
        except OSError:
            return
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError:  # the reader went away (EPIPE): nothing more to hand over
            pass
        finally:
            os.close(fd)

    def __exit__(self, *exc: object) -> None:
        if self.path is None:
            return
        if self._thread is not None and self._thread.is_alive():
            try:  # a reader that takes nothing: the writer's open returns, its write fails or fills the buffer
                fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            except OSError:
                fd = None
            self._thread.join(5)
            if fd is not None:
                os.close(fd)
            self._thread.join(5)
        shutil.rmtree(self._dir or "", ignore_errors=True)
