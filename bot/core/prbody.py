"""The bot PR's title and body, the dashboard issue, and the gate decision. Pure functions.

GitHub refuses a PR or issue body over 65,536 characters; long lists are summarized and the
whole body is kept under ``BODY_LIMIT``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.core.chatops import checkbox_lines, ignored_marks
from bot.core.decisions import GateDecision, failure_mark
from bot.core.drift import DriftReport
from bot.core.edits import EditSet
from bot.core.models import EditKind, Plan, Rejection
from bot.render.drift import drift_markdown, hand_fix_banner
from bot.render.markdown import (
    bare_url,
    code_block,
    code_span,
    escape_html,
    escape_message,
    escape_text,
    link,
    url_part,
)

BODY_LIMIT = 60_000  # GitHub's hard limit is 65,536
RELEASE_NOTES = {
    "flashinfer-python": "https://github.com/flashinfer-ai/flashinfer/releases/tag/v{version}",
    "flashinfer-cubin": "https://github.com/flashinfer-ai/flashinfer/releases/tag/v{version}",
    "flashinfer-jit-cache":
        "https://github.com/flashinfer-ai/flashinfer/releases/tag/v{version}",
}
KIND_TITLES = {EditKind.REQUIREMENT: "Requirements", EditKind.DOCKERFILE_ARG: "Dockerfile ARG/ENV",
               EditKind.DOCKERFILE_RUN: "Dockerfile RUN pins",
               EditKind.ASSERTION: "Version assertions", EditKind.DOC: "Docs"}


def _code(text: str) -> str:
    return code_span(text, in_table=True)


def _links(package: str, version: str) -> str:
    v = url_part(version)
    links = [link("PyPI", f"https://pypi.org/project/{url_part(package)}/{v}/")]
    if package in RELEASE_NOTES:
        links.insert(0, link("release notes", RELEASE_NOTES[package].format(version=v)))
    return " · ".join(links)


def _rejection(r: Rejection) -> str:
    return f"- {code_span(r.package)} {escape_text(r.version)}: {escape_message(r.reason)}"


def pr_title(plan: Plan) -> str:
    others = sorted({c.package for c in plan.changes} - {plan.lead})
    tail = f" (+ {', '.join(others)})" if others else ""
    return f"Bump {plan.lead} {plan.lead_current} → {plan.lead_target}{tail}"


@dataclass
class GateInfo:
    workflow: str
    runner_labels: Mapping[str, Sequence[str]]
    required: Sequence[str]


def _capped(lines: list[str], limit: int, what: str) -> list[str]:
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"- … and {len(lines) - limit} more {what}"]


def pr_body(plan: Plan, edits: EditSet, drift: DriftReport | None, gate: GateInfo,
            notes: Sequence[str] = (), limit: int = 25, blob_url: str | None = None,
            release_notes: Sequence[str] = ()) -> str:
    """``blob_url`` (``https://github.com/OWNER/NAME/blob/BRANCH``) links findings to lines."""
    out = [*hand_fix_banner(drift, blob_url),
           "pinbump proposes the newest **complete and consistent** set of the "
           f"{code_span(plan.group)} group: every lockstep package is published at the lead's "
           "version and every companion satisfies the set's `Requires-Dist`.", "",
           "| package | from | to | links | why |", "| --- | --- | --- | --- | --- |"]
    for c in plan.changes:
        out.append(f"| {_code(c.package)} | {_code(c.specifier_before)} | "
                   f"{_code(c.specifier_after)} | {_links(c.package, c.target)} | "
                   f"{escape_message(c.reason, in_table=True)} |")
    for package, spec, why in plan.unchanged:
        out.append(f"| {_code(package)} | {_code(spec)} | unchanged | | "
                   f"{escape_message(why, in_table=True)} |")
    if plan.rejected:
        out += ["", "<details><summary>Versions rejected "
                f"({len(plan.rejected)})</summary>", ""]
        out += _capped([_rejection(r) for r in plan.rejected], limit, "rejections")
        out += ["", "</details>"]
    for package, why in plan.not_verified:
        out.append(f"\n> **Not verified:** {code_span(package)}: {escape_message(why)}")
    if release_notes:  # already escaped, section by section (bot.core.release_notes)
        out += ["", *release_notes]
    out += ["", "### Files changed", ""]
    by_kind: dict[EditKind, list[str]] = {}
    for e in edits.edits:
        by_kind.setdefault(e.kind, []).append(f"- {code_span(f'{e.file}:{e.line}')} "
                                              f"{code_span(e.before)} → {code_span(e.after)}")
    for kind, lines in by_kind.items():
        out += [f"**{escape_text(KIND_TITLES.get(kind, kind))}**",
                *_capped(lines, limit, "edits"), ""]
    if edits.left_unchanged:
        out += ["<details><summary>Old versions left unchanged "
                f"({len(edits.left_unchanged)}): check them by hand</summary>", ""]
        out += _capped([f"- {code_span(f'{m.file}:{m.line}')} {escape_text(m.version)}: "
                        f"{code_span(m.text)}" for m in edits.left_unchanged], limit, "places")
        out += ["", "</details>", ""]
    out += [f"- note: {escape_message(n)}" for n in notes]
    if drift is not None:
        out += ["", drift_markdown(drift, limit=limit, blob_url=blob_url)]
    out += ["### GPU gate", "",
            f"Workflow {code_span(gate.workflow)} runs `gpu_tests/` on the PR's head commit, "
            "one job per runner class; the PR merges only when all of them pass on that "
            "commit.", "",
            "| job | runner labels | required status |", "| --- | --- | --- |"]
    for job, labels in gate.runner_labels.items():
        status = next((r for r in gate.required if r.endswith(f"/{job}")), "—")
        out.append(f"| {escape_text(job)} | {_code(', '.join(labels))} | {_code(status)} |")
    others = [r for r in gate.required if not any(r.endswith(f"/{job}")
                                                   for job in gate.runner_labels)]
    if others:
        out += ["", "Also required on the head commit: " + ", ".join(_code(r) for r in others)
                + (" (failing while a call of the target needs a hand fix)"
                   if "pinbump/drift" in others else "") + "."]
    rerun = code_span(f"gh workflow run {gate.workflow} -f pr=<this PR> -f sha=<head SHA>")
    out += ["", f"Re-run the gate: {rerun}, or re-run the failed jobs from the Actions tab. "
            "Maintainers can also add the `gpu-gate` label.", "",
            "<sub>Opened by pinbump. Hand edits to this branch are kept: pinbump then stops "
            "updating it (comment `/pinbump recreate` to start over, `/pinbump rebase` to "
            "rebase it). Close the PR to skip this version (`/pinbump unignore` undoes it). "
            "Commands: `/pinbump rebase`, `recreate`, `ignore this version`, `unignore`, "
            "`gate`, `explain`.</sub>"]
    return fit("\n".join(out) + "\n")


def fit(body: str) -> str:
    if len(body) <= BODY_LIMIT:
        return body
    cut = body[:BODY_LIMIT]
    cut = cut[: cut.rfind("\n")]
    return cut + "\n\n… (truncated: the full report is in the job summary)\n"


def failure_comment(sha: str, decision: GateDecision,
                    summaries: Sequence[tuple[str, str]] = ()) -> str:
    """The one comment per failed head SHA; ``summaries`` are (job, summary.md) pairs.

    A summary.md comes from a GPU job's artifact: text the gate does not trust (the GPU jobs
    hold no write token, and their output must not gain one by being rendered), so it is
    shown verbatim in a fenced block, never as live Markdown."""
    lines = [failure_mark(sha),
             f"The GPU gate failed on {code_span(sha[:12])}; the PR stays open.", ""]
    lines += [f"- {code_span(c.name)}: {link('details', c.url)}" if c.url
              else f"- {code_span(c.name)}" for c in decision.failing]
    budget = BODY_LIMIT // max(1, len(summaries)) - 200
    for job, text in summaries:
        text = text if len(text) <= budget else text[:budget] + "\n… (truncated)\n"
        lines += ["", f"<details><summary>{escape_html(job)}</summary>", "",
                  *code_block(text.strip(), "markdown"), "", "</details>"]
    return fit("\n".join(lines) + "\n")


# -- the dashboard -------------------------------------------------------------------------
DASHBOARD_TITLE = "pinbump: dependency dashboard"


def explain_markdown(plan: Plan, limit: int = 30) -> str:
    """The answer to ``/pinbump explain``: why each package moves (or not), and why every
    newer version was rejected."""
    out = [f"**Why `{plan.group}` moves as it does** (lead {code_span(plan.lead)} "
           f"{escape_text(plan.lead_current)}" + (f" → {escape_text(plan.lead_target)})"
                                                   if plan.changes else ")"), ""]
    if not plan.changes:
        out.append("Nothing to bump: the current set is the newest complete and consistent "
                   "one.")
    out += [f"- {code_span(c.package)} {code_span(c.specifier_before)} → "
            f"{code_span(c.specifier_after)}: {escape_message(c.reason)}" for c in plan.changes]
    out += [f"- {code_span(p)} {code_span(spec)} unchanged: {escape_message(why)}"
            for p, spec, why in plan.unchanged]
    if plan.rejected:
        out += ["", "Rejected versions:", ""]
        out += _capped([_rejection(r) for r in plan.rejected], limit, "rejections")
    return fit("\n".join(out) + "\n")


def dashboard_body(plan: Plan | None, pr_url: str | None, gate_state: str | None,
                   limit: int = 30, *, ignored: Mapping[str, str] | None = None,
                   marks: Sequence[str] = (), held: tuple[str, int] | None = None) -> str:
    out = ["This issue lists pending updates of the GPU-kernel stack; pinbump keeps it current.",
           ""]
    if plan is None or not plan.changes:
        lead = f" ({code_span(plan.lead)} {escape_text(plan.lead_current)})" if plan else ""
        out.append(f"**Up to date**{lead}: no complete and consistent newer set.")
    else:
        out += ["### Pending updates", "", "| package | from | to |", "| --- | --- | --- |"]
        out += [f"| {_code(c.package)} | {_code(c.specifier_before)} | "
                f"{_code(c.specifier_after)} |" for c in plan.changes]
    if pr_url:
        out += ["", f"Open bot PR: {bare_url(pr_url)} — GPU gate: "
                f"**{escape_text(gate_state or 'pending')}**"]
    if held is not None:
        out += ["", f"**Held back:** {escape_text(held[0])} is available, but #{held[1]} has "
                "hand edits; comment `/pinbump recreate` on it to start over from the new "
                "target, or `/pinbump rebase` to keep the edits on the current one."]
    if ignored:
        out += ["", "### Ignored versions", ""]
        out += [f"- {code_span(v)}: {how}" for v, how in sorted(ignored.items())]  # ours
    target = plan.lead_target if plan is not None and plan.changes else None
    out += ["", "### Actions", "", *checkbox_lines(target, (ignored or {}).keys())]
    out += ignored_marks(marks)
    if plan is not None and plan.rejected:
        out += ["", "### Rejected versions", ""]
        out += _capped([_rejection(r) for r in plan.rejected], limit, "rejections")
    if plan is not None:
        out += [f"- not verified: {code_span(p)}: {escape_message(w)}"
                for p, w in plan.not_verified]
    return fit("\n".join(out) + "\n")
