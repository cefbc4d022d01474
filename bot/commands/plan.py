"""pinbump plan: the newest complete and consistent set for the target's group."""

from __future__ import annotations

from contextlib import closing

from bot.adapters.sources import IndexSource
from bot.commands.context import Services
from bot.core.models import Plan
from bot.core.resolve import cutoff_for, make_plan
from bot.core.workspace import Workspace


def plan(ws: Workspace, services: Services, as_of: str | None = None) -> Plan:
    """Query the index for the group (pages fetched at once) and resolve."""
    group = ws.group
    services.http.authorize(ws.policy.credentials)  # the index's, to its origin only
    source = IndexSource(services.index, ws.policy, ws.env)
    with closing(source), services.progress(
            f"querying the index for {', '.join(group.members)}"):
        source.prefetch(group.members)
        now = cutoff_for(as_of, services.clock())
        return make_plan(ws.target, ws.policy, source, now, as_of=bool(as_of), env=ws.env)
