"""pinbump plan: the newest complete and consistent set for the target's group."""

from __future__ import annotations

import os
from contextlib import closing

from bot.adapters.sources import IndexSource
from bot.commands.context import Services
from bot.core.config import Policy, builtin_data
from bot.core.discovery import Target
from bot.core.indexmodel import IndexModel, build_model
from bot.core.models import Plan
from bot.core.resolve import companion_currents, cutoff_for, lead_pins_of, make_plan
from bot.core.workspace import Workspace
from bot.errors import IndexError_


def plan(ws: Workspace, services: Services, as_of: str | None = None) -> Plan:
    """Query the index for the group (pages fetched at once) and resolve."""
    group = ws.group
    lead_pins = lead_pins_of(ws.target, ws.policy)  # none: said before any request
    services.http.authorize(ws.policy.credentials)  # the index's, to its origin only
    model = index_model(ws.target, ws.policy)
    now = cutoff_for(as_of, services.clock())
    source = IndexSource(services.index, ws.policy, ws.env, model,
                         cutoff=now if as_of else None,
                         currents={**companion_currents(ws.target, group), **dict.fromkeys(
                             (group.lead, *group.lockstep),
                             max((p.current for p in lead_pins if p.current), default=None))})
    with closing(source), services.progress(
            f"querying the indexes for {', '.join(group.members)}"):
        source.prefetch(group.members)
        result = make_plan(ws.target, ws.policy, source, now, as_of=bool(as_of), env=ws.env,
                           model=model)
    check_strict(result, ws.policy)
    return result


FLASHINFER_WHL_ENV = "PINBUMP_FLASHINFER_WHL"  # a mirror of https://flashinfer.ai/whl, or ""


def index_model(target: Target, policy: Policy) -> IndexModel:
    """The indexes of each package: built-in data, the target's declarations, the config."""
    group = policy.active_group
    return build_model(group.members, builtin_data(group.name), pypi=policy.index_url,
                       base=os.environ.get(FLASHINFER_WHL_ENV),
                       configured=policy.package_index, config_source=policy.source,
                       decls=target.indexes,
                       variants=policy.cuda_variants or target.cuda_variants,
                       channel=policy.channel)


def check_strict(plan: Plan, policy: Policy) -> None:
    """--strict (or strict = true): an index that could not be read is an error."""
    if policy.strict and plan.unreachable:
        raise IndexError_("--strict: " + "; ".join(str(p) for p in plan.unreachable))
