"""The lead's GitHub release notes between the current and the target version, embedded in
the bot PR (issue 16, item 6). Pure functions over the releases the adapter read.

Release notes are outside text: every line goes through the one Markdown escaping module, so
no mention, link, image or HTML survives; headings such as "Breaking" or "Manual Intervention
Needed" are lifted to the top, and the whole section is truncated to fit the PR body.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from bot.render.markdown import escape_html, escape_text, link, url_part

RELEASE_REPOS = {"flashinfer-python": "flashinfer-ai/flashinfer",
                 "flashinfer-cubin": "flashinfer-ai/flashinfer",
                 "flashinfer-jit-cache": "flashinfer-ai/flashinfer"}
ATTENTION = re.compile(r"breaking|manual intervention|action required|migration|deprecat",
                       re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")


@dataclass(frozen=True)
class Release:
    tag: str
    name: str
    body: str


def _version(tag: str) -> Version | None:
    try:
        return Version(tag[1:] if tag[:1] in "vV" else tag) if len(tag) <= 64 else None
    except InvalidVersion:
        return None


def between(releases: Sequence[Release], current: str, target: str) -> list[Release]:
    """Releases after ``current`` up to and including ``target``, newest first."""
    low, high = Version(current), Version(target)
    chosen = [(v, r) for r in releases if (v := _version(r.tag)) is not None and low < v <= high]
    return [r for _, r in sorted(chosen, key=lambda pair: pair[0], reverse=True)]


def _sections(body: str) -> list[tuple[str, list[str]]]:
    """(heading, lines) in order; text before the first heading has the heading ""."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in (body or "").replace("\r\n", "\n").split("\n"):
        m = _HEADING.match(line)
        if m:
            out.append((m.group(2), []))
        else:
            out[-1][1].append(line)
    return [(h, lines) for h, lines in out if h or any(x.strip() for x in lines)]


def _line(line: str) -> str:
    m = _BULLET.match(line)
    if m:
        return f"{'  ' * min(len(m.group(1)) // 2, 3)}- {escape_text(m.group(2))}"
    return escape_text(line.strip())


def _render(lines: Sequence[str]) -> list[str]:
    out = [_line(x) for x in lines]
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return out


def _release_url(repo: str, tag: str) -> str:
    return f"https://github.com/{repo}/releases/tag/{url_part(tag)}"


def notes_markdown(package: str, repo: str, releases: Sequence[Release], current: str,
                   target: str, limit: int = 12_000) -> list[str]:
    """The PR body's release-notes section; [] when no release lies in between."""
    chosen = between(releases, current, target)
    if not chosen:
        return []
    out = [f"### Release notes: {escape_text(package)} {escape_text(current)} → "
           f"{escape_text(target)}", ""]
    attention = [(r, h, lines) for r in chosen for h, lines in _sections(r.body)
                 if h and ATTENTION.search(h)]
    if attention:
        out += ["**Needs attention** (lifted from the release notes):", ""]
        for r, heading, lines in attention:
            out += [f"**{escape_text(r.tag)}: {escape_text(heading)}**", "", *_render(lines),
                    ""]
    for r in chosen:
        title = escape_html(f"{r.tag}: {r.name}" if r.name and r.name != r.tag else r.tag)
        out += [f"<details><summary>{title}</summary>", ""]
        for heading, lines in _sections(r.body):
            if heading:
                out += [f"**{escape_text(heading)}**", ""]
            out += [*_render(lines), ""]
        out += [link("full notes", _release_url(repo, r.tag)), "", "</details>", ""]
    text = "\n".join(out)
    if len(text) > limit:
        cut = text[:limit]
        cut = cut[: cut.rfind("\n")]
        closing = "\n</details>\n" if cut.count("<details>") > cut.count("</details>") else ""
        text = (cut + "\n\n… (truncated: " +
                link("all releases", f"https://github.com/{repo}/releases") + ")\n" + closing)
    return text.split("\n")
