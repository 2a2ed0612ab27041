# Copyright: (c) 2026, gpuops.cluster contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A store brought to some of its schema revisions only: the database an earlier release left, for the tests that
open it with this collection (``open_store`` then migrates it to every head)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from alembic import command

from ansible_collections.gpuops.cluster.plugins.plugin_utils.store import engine as db_engine


def upgrade_to(store: Any, *revisions: str, then: Optional[Callable[[Any], None]] = None) -> None:
    """Upgrade ``store`` (opened with ``migrate_schema=False``) to each of ``revisions`` in one transaction, then
    run ``then(conn)`` in the same transaction (data or columns as that release had them)."""
    script = db_engine._script()
    with store.begin() as conn:
        script["cfg"].attributes["connection"] = conn
        try:
            for rev in revisions:
                command.upgrade(script["cfg"], rev)
        finally:
            script["cfg"].attributes.pop("connection", None)
        if then is not None:
            then(conn)
