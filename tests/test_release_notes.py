"""Release notes embedded in the bot PR (issue 16, item 6): the pure section builder, and
the run against the emulator serving upstream's releases."""

from __future__ import annotations

import re

import cmarkgfm
import pytest
from test_run_gate import World, last_json, worlds

from bot.core.release_notes import Release, between, notes_markdown

world = pytest.fixture(worlds, name="world")
REPO = "flashinfer-ai/flashinfer"
HOSTILE = ("## What's Changed\n- fix by @mallory in https://evil.example/x\n"
           "- ![img](https://evil.example/i.png) <img src=x> </details><h1>owned</h1>\n"
           "## Manual Intervention Needed\n- rebuild the JIT cache: `rm -rf ~/.cache/fi`\n")
RELEASES = [Release("v0.6.12", "v0.6.12", "later"), Release("v0.6.11", "FlashInfer 0.6.11",
                                                            HOSTILE),
            Release("v0.6.10", "", "## Breaking\n- `fp4_quantize` gained a parameter\n"),
            Release("v0.6.8.post1", "", "older"), Release("nightly", "", "not a version")]


def test_between_takes_the_releases_after_current_up_to_target_newest_first() -> None:
    assert [r.tag for r in between(RELEASES, "0.6.8.post1", "0.6.11")] == ["v0.6.11",
                                                                          "v0.6.10"]
    assert between(RELEASES, "0.6.11", "0.6.11") == []


def test_attention_sections_are_lifted_and_nothing_outside_is_live() -> None:
    text = "\n".join(notes_markdown("flashinfer-python", REPO, RELEASES, "0.6.8.post1",
                                    "0.6.11"))
    attention = text.index("**Needs attention**")
    assert attention < text.index("<details><summary>v0.6.11")
    assert text.index("v0.6.11: Manual Intervention Needed") < text.index("<details>")
    assert text.index("v0.6.10: Breaking") < text.index("<details>")
    html = cmarkgfm.github_flavored_markdown_to_html(text)
    assert "<img" not in html and "<h1>" not in html and 'href="https://evil' not in html
    assert not re.search(r"(?<![\w\u2060])@mallory", html.replace("\u2060", "\u2060"))
    assert 'href="https://github.com/flashinfer-ai/flashinfer/releases/tag/v0.6.11"' in html


def test_long_notes_are_truncated_with_a_link() -> None:
    long = [Release("v0.6.11", "", "## Notes\n" + "- item\n" * 5000)]
    lines = notes_markdown("flashinfer-python", REPO, long, "0.6.8.post1", "0.6.11",
                           limit=2000)
    text = "\n".join(lines)
    assert len(text) < 2300 and "… (truncated: [all releases]" in text
    assert text.count("<details>") == text.count("</details>")


def test_release_notes_embedded_in_the_pr(world: World,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    world.emu.state.releases[REPO] = [{"tag": r.tag, "name": r.name, "body": r.body}
                                      for r in RELEASES]
    assert world.run() == 0
    body = world.emu.state.items[last_json(capsys.readouterr().out)["pr"]]["body"]
    assert "### Release notes: flashinfer-python 0.6.8.post1 → 0.6.11" in body
    assert "**v0.6.11: Manual Intervention Needed**" in body
    assert "v0.6.12" not in body.split("### Release notes")[1].split("### Files")[0]


def test_unavailable_release_notes_leave_the_links(world: World,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert world.run() == 0  # the emulator knows no releases of flashinfer-ai/flashinfer
    captured = capsys.readouterr()
    body = world.emu.state.items[last_json(captured.out)["pr"]]["body"]
    assert "### Release notes" not in body and "[release notes](https://github.com/" in body
    assert "release notes unavailable" in captured.err
