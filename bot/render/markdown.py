"""The one place text that pinbump did not write becomes GitHub-flavoured Markdown.

Everything from outside (yank reasons, deprecation text and defaults read from wheels, versions
and names from an index, file names and lines of the target, check names) goes through one of
these functions before it reaches the PR body, the dashboard, a comment or the drift section:

- ``escape_text``: inline prose. Control characters become spaces (one line, so it can never
  open a block), every ASCII character that starts an inline construct is backslash-escaped
  (links, images, emphasis, code, raw HTML and entities, strikethrough, table pipes, math),
  and the extended autolinks (``www.``, ``scheme:``) are broken.
- ``code_span``: identifiers, versions, file names and source lines, shown verbatim in a code
  span whose backtick fence is longer than any run of backticks inside, so it cannot be closed
  early; ``in_table`` also escapes ``|``, which GFM splits cells on even inside code.
- ``escape_message``: pinbump's own messages that quote outside names in backticks: quoted
  parts become code spans, the rest is escaped.
- ``code_block``: a fenced block (signatures) with a fence longer than any run inside.
- ``escape_html``: text inside raw HTML blocks (``<summary>``), where Markdown escapes do not
  apply.

**Mentions and references.** GitHub turns ``@user``, ``@org/team`` and ``#123`` in rendered
text into notifications and cross-references, and backslash escapes do not stop it. pinbump
puts a WORD JOINER (U+2060, invisible, no line break) right after every ``@`` and ``#`` that
is followed by a letter or digit in escaped text, so ``@user`` still reads as ``@user`` but
pings nobody. Code spans need nothing: GitHub does not look for mentions inside code.
"""

from __future__ import annotations

import html
import re
import unicodedata
from urllib.parse import quote

WORD_JOINER = "\u2060"
# ASCII characters that can open an inline construct in CommonMark or GitHub's extensions.
_SPECIAL = re.compile(r"([\\`*\[\]<|~&$])")
# An underscore opens or closes emphasis only when it is not between two letters or digits;
# a colon matters only in a scheme the autolink extension knows (http://, mailto:, xmpp:).
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_SCHEME_COLON = re.compile(r"(?i):(?=//)|(?<=mailto):|(?<=xmpp):")
_AFTER_SIGIL = re.compile(r"([@#])(?=[\w\-])")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")
_WWW = re.compile(r"(?i)(www)\.")
_BIDI = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"))
_SAFE_URL = re.compile(r"https://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9._~%!$&'*+,;=:@/-]*)?"
                       r"(?:\?[A-Za-z0-9._~%!$&'*+,;=:@/?-]*)?")


def one_line(text: str) -> str:
    """Control characters (newlines included) become spaces; bidi overrides are dropped."""
    text = str(text).translate(_BIDI)
    return "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)


def _unmention(text: str) -> str:
    return _AFTER_SIGIL.sub(lambda m: m.group(1) + WORD_JOINER, text)


def escape_text(text: str) -> str:
    """Inline prose from outside pinbump, rendered literally and inertly."""
    out = _SPECIAL.sub(r"\\\1", one_line(text))
    out = _UNDERSCORE.sub(r"\\_", out)
    out = _SCHEME_COLON.sub(r"\\:", out)
    out = _WWW.sub(r"\1\\.", out)
    out = _unmention(out)
    if out[:1] in ("-", "=", "+", "#", ">"):  # never a block marker, wherever it lands
        out = "\\" + out
    out = _ORDERED.sub(r"\1\\\2", out)
    return out


def code_span(text: str, *, in_table: bool = False) -> str:
    """``text`` verbatim as inline code that nothing inside can close."""
    body = one_line(text)
    if in_table:
        body = body.replace("|", "\\|")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    if body[:1] in ("`", " ") or body[-1:] in ("`", " "):
        body = f" {body} "  # CommonMark strips exactly one space from each side
    return f"{fence}{body}{fence}"


def escape_message(text: str, *, in_table: bool = False) -> str:
    """A message pinbump wrote that quotes names in backticks but may embed outside text
    (defaults, deprecation notes, yank reasons). Each backtick-quoted part becomes a code span,
    everything else is escaped text; however the outside text places its backticks, every
    piece goes through ``code_span`` or ``escape_text``, so nothing can become live."""
    parts = one_line(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: the last one is plain text
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    out = []
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(escape_text(part))
        elif not part:
            out.append(escape_text("``"))
        else:
            if i > 1 and out[-1] == "":  # two code spans side by side would merge their fences
                out[-1] = WORD_JOINER
            out.append(code_span(part, in_table=in_table))
    return "".join(out)


def code_block(text: str, info: str = "") -> list[str]:
    """Lines of a fenced code block holding ``text``; the fence outlasts any run inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    lines = [one_line(line) for line in str(text).split("\n")]
    return [f"{fence}{info}", *lines, fence]


def escape_html(text: str) -> str:
    """Text inside a raw HTML block (``<summary>...</summary>``): entities, no mentions."""
    return _unmention(html.escape(one_line(text), quote=True))


def link(label: str, url: str) -> str:
    """A link with an escaped label, or just the label when ``url`` is not a plain https URL."""
    if not _SAFE_URL.fullmatch(url):
        return escape_text(label)
    return f"[{escape_text(label)}]({url})"


def bare_url(url: str) -> str:
    """A URL GitHub may autolink when it is a plain https URL, else inert text."""
    return url if _SAFE_URL.fullmatch(url) else escape_text(url)


def url_part(text: str) -> str:
    """One path segment of a URL built by pinbump (a package name or a version)."""
    return quote(str(text), safe="")
