"""Tests' shorthand for the command wiring: a workspace, the services and a plan."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bot.commands.context import PlanOptions, Services, load_workspace, open_services
from bot.commands.drift import DriftOutcome, drift
from bot.commands.plan import plan
from bot.core.models import Plan
from bot.core.workspace import Workspace


@dataclass(frozen=True)
class Planned:
    plan: Plan
    ws: Workspace
    services: Services


@contextmanager
def planned(opts: PlanOptions) -> Iterator[Planned]:
    """Load the target, open the services and plan; the services stay open inside."""
    ws = load_workspace(opts.repo, opts.overrides)
    with open_services(opts) as services:
        yield Planned(plan(ws, services, opts.as_of), ws, services)


def run_drift(opts: PlanOptions, old: str, new: str, services: Services | None = None
              ) -> DriftOutcome:
    ws = load_workspace(opts.repo, opts.overrides)
    if services is not None:
        return drift(ws, services, old, new)
    with open_services(opts) as own:
        return drift(ws, own, old, new)
