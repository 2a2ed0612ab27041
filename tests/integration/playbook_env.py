"""The environment the integration tests run ansible-playbook in: this checkout's venv first on PATH, its collection
(build/) and ansible.cfg, no colour or deprecation noise, no inventory inherited from the caller."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"


def playbook_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "ANSIBLE_INVENTORY"}
    env.update(
        PATH=os.pathsep.join((str(VENV_BIN), env.get("PATH", ""))),
        ANSIBLE_COLLECTIONS_PATH=str(REPO / "build"),
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_DEPRECATION_WARNINGS="False",
    )
    env.update(extra)
    return env
