"""Property tests: whatever an index serves (PEP 691 JSON, PEP 503 HTML, file names, version
strings, core metadata), the index client's parsing and the resolver end in a clean result or
a ``PinbumpError``, never another exception.

(Requirement lines and TOML for discovery are generated in the same way elsewhere.)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from packaging.requirements import Requirement
from packaging.version import Version

from bot.adapters.index import make_file, parse_html_page, parse_json_page, parse_requires_dist
from bot.core.config import parse_config
from bot.core.discovery import Target, parse_pyproject
from bot.core.models import DistFile, Plan, ProjectPage
from bot.core.resolve import make_plan
from bot.errors import PinbumpError

BOUNDED = settings(max_examples=200, deadline=2000, database=None,
                   suppress_health_check=[HealthCheck.too_slow])
PAGE = "https://index.example/simple/kernelpkg/"
NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)
PACKAGES = ("kernelpkg", "kernelcubin", "comp")

# -- strategies ------------------------------------------------------------------------------
HUGE = st.sampled_from([600, 4300, 4301, 5000]).flatmap(
    lambda n: st.sampled_from(["1" * n, "0." + "9" * n, "1." + "0" * n + "1", "1!" + "2" * n]))


def rarely(valid: st.SearchStrategy[Any], junk: st.SearchStrategy[Any], odds: int = 12
           ) -> st.SearchStrategy[Any]:
    """Mostly ``valid``, one draw in ``odds`` ``junk``: pages that get far enough to be
    resolved, with a hostile value somewhere."""
    return st.integers(0, odds - 1).flatmap(lambda n: junk if n == odds // 2 else valid)


VERSIONS = rarely(st.one_of(
    st.sampled_from(["1.0", "2.0", "1.0.post1", "2.0+evil.example", "3.0rc1", "0.6.12"]),
    st.sampled_from(["1.0", "2.0", "1.0.post1", "2.0+evil.example", "3.0rc1", "0.6.12"]),
    st.from_regex(r"([0-9]{1,2}!)?[0-9]{1,3}(\.[0-9]{1,3}){0,3}((a|b|rc)[0-9]{1,2})?"
                  r"(\.post[0-9])?(\.dev[0-9])?(\+[a-z0-9]{1,6}(\.[a-z0-9]{1,6})?)?",
                  fullmatch=True),
    st.sampled_from(["1.0", "2.0", "1.0.post1", "2.0+evil.example", "3.0rc1", "0.6.12"])),
    HUGE | st.text(max_size=12), odds=6)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                               max_size=3),
    max_leaves=8)


def filenames(name: str) -> st.SearchStrategy[str]:
    dist = name.replace("-", "_")
    return rarely(st.one_of(
        VERSIONS.map(lambda v: f"{dist}-{v}-py3-none-any.whl"),
        VERSIONS.map(lambda v: f"{dist}-{v}.tar.gz"),
        VERSIONS.map(lambda v: f"{dist}-{v}-cp312-cp312-manylinux_2_28_x86_64.whl")),
        st.text(max_size=30))


def either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly what the field should hold; sometimes any JSON value at all."""
    return rarely(valid, JSON, odds=30)


SPECIFIERS = st.sampled_from([">=3.10", "<3", ">=3.9,<4", "garbage", ">=" + "1" * 5000,
                              "==3.*", ""]) | st.text(max_size=10)
URLS = rarely(st.just("../../files/x.whl"), st.sampled_from(["http://[::1", "https://h.example/x.whl#sha256=ab",
                        "", "//other.example/x.whl", "https://u:p@h.example/x.whl",
                        "http://h.example:99999/x.whl", "javascript:alert(1)"]) |
    st.text(max_size=20), odds=30)
HASHES = st.dictionaries(st.sampled_from(["sha256", "md5", ""]),
                         rarely(st.text("0123456789abcdef", max_size=64), JSON), max_size=2)
TIMES = st.sampled_from(["2025-01-01T00:00:00Z", "2025-01-01T00:00:00.123456+02:00",
                         "not a date", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00"]) | \
    st.text(max_size=12)


def entries(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "filename": either(filenames(name)),
        "url": either(URLS)}, optional={
        "hashes": either(HASHES),
        "requires-python": either(SPECIFIERS | st.none()),
        "yanked": either(st.booleans() | st.text(max_size=10)),
        "upload-time": either(TIMES),
        "core-metadata": either(st.booleans() | HASHES),
        "dist-info-metadata": either(st.booleans() | HASHES),
        "size": either(rarely(st.integers(min_value=0), st.integers())),
    })


def json_pages(name: str) -> st.SearchStrategy[bytes]:
    doc = st.fixed_dictionaries({"files": either(st.lists(either(entries(name)), max_size=6))},
                                optional={"meta": JSON, "name": JSON})
    return rarely(doc.map(lambda d: json.dumps(d).encode()), st.one_of(
        JSON.map(lambda d: json.dumps(d).encode()),
        st.binary(max_size=40),
        st.sampled_from([b"[" * 100_000, b'{"files": ' + b"1" * 5000 + b"}",
                         b'{"files": [{"filename": "x", "url": "y"}]' + b"}" * 10])), odds=6)


def typed_pages(name: str) -> st.SearchStrategy[bytes]:
    """Pages whose every field has its standard type: what is hostile is in the values
    (versions, yanks, Requires-Python, upload times), so the resolver gets to see them."""
    dist = name.replace("-", "_")
    entry = st.builds(
        lambda version, tag, yanked, rp, when: {
            "filename": f"{dist}-{version}-{tag}.whl", "url": f"../../f/{dist}-{version}.whl",
            "hashes": {"sha256": "ab" * 32}, "yanked": yanked, "requires-python": rp,
            "upload-time": when},
        VERSIONS, st.sampled_from(["py3-none-any", "cp312-cp312-manylinux_2_28_x86_64",
                                   "cp312-cp312-win_amd64"]),
        st.booleans() | st.text(max_size=8), st.none() | SPECIFIERS, TIMES)
    return st.lists(entry, max_size=6).map(
        lambda files: json.dumps({"meta": {"api-version": "1.1"}, "files": files}).encode())


ATTRS = st.sampled_from(["href", "data-yanked", "data-requires-python", "data-core-metadata",
                         "data-dist-info-metadata", "rel"])


def html_pages(name: str) -> st.SearchStrategy[str]:
    anchor = st.builds(
        lambda href, attrs, text: '<a href="{}"{}>{}</a>'.format(
            escape(href), "".join(f' {k}="{escape(v)}"' if v is not None else f" {k}"
                                  for k, v in attrs.items()), escape(text)),
        st.one_of(filenames(name).map(lambda f: f"../../files/{f}#sha256=" + "ab" * 32),
                  URLS),
        st.dictionaries(ATTRS.filter(lambda a: a != "href"),
                        st.none() | SPECIFIERS | st.text(max_size=10), max_size=3),
        st.text(max_size=10))
    base = st.sampled_from(["", '<base href="https://cdn.example/">', '<base href="http://[x">'])
    return st.one_of(
        st.builds(lambda b, anchors: f"<html>{b}<body>{''.join(anchors)}</body></html>",
                  base, st.lists(anchor, max_size=6)),
        st.text(max_size=60))


METADATA = st.one_of(
    st.lists(st.sampled_from([
        "comp>=1.0", "comp==" + "1" * 5000, "comp>=" + "9" * 600, "kernelcubin==2.0",
        "comp[extra]>=1; extra == 'x'", "comp ; python_version < '3'", "not a requirement!",
        "comp===1.0", "comp~=1.0", "comp!=1.*", "comp>=1.0+local"]) | st.text(max_size=20),
        max_size=4).map(lambda reqs: ("Metadata-Version: 2.1\nName: kernelpkg\n" + "".join(
            f"Requires-Dist: {r}\n" for r in reqs) + "\n").encode("utf-8", "surrogatepass")),
    st.binary(max_size=80))


# -- the resolver over what the pages said ----------------------------------------------------
@dataclass
class PageSource:
    pages: dict[str, ProjectPage]
    metadata: bytes

    def releases_on(self, package: str, index: object) -> dict[Version, list[DistFile]]:
        if package not in self.pages:
            from bot.errors import UnknownPackage

            raise UnknownPackage(f"{package}: not found")
        return self.pages[package].versions()

    def requires(self, package: str, version: Version, files: object = ()
                 ) -> list[Requirement]:
        return parse_requires_dist(self.metadata)

    def upload_time(self, file: DistFile) -> datetime | None:
        return file.upload_time


def resolve(pages: dict[str, ProjectPage], metadata: bytes, pins: tuple[str, ...]) -> Plan:
    deps = ",\n".join(json.dumps(p) for p in pins)
    toml = parse_pyproject(f'[project]\nrequires-python = ">=3.10"\ndependencies = [\n{deps}\n]\n',
                           "pyproject.toml", set(PACKAGES))
    target = Target(root=Path("/t"), tomls=(toml,), pins=tuple(toml.pins))
    policy = parse_config({"group": "k", "min-release-age": 1, "groups": {"k": {
        "lead": "kernelpkg", "lockstep": ["kernelcubin"], "companions": ["comp"]}}},
        "pinbump.toml")
    return make_plan(target, policy, PageSource(pages, metadata), NOW)


def clean_or_pinbump_error(fn: Any, *args: Any) -> Any:
    """fn(*args), or None when it raised a PinbumpError; anything else fails the test."""
    try:
        return fn(*args)
    except PinbumpError as exc:
        message = str(exc)
        assert message and "\n" not in message.strip(), message
        return None


PINS = st.sampled_from([("kernelpkg==1.0", "kernelcubin==1.0", "comp>=1.0"),
                        ("kernelpkg>=1.0",), ("kernelpkg==2.0+evil.example",)])


@BOUNDED
@given(lead=json_pages("kernelpkg"), cubin=json_pages("kernelcubin"),
       comp=html_pages("comp"), metadata=METADATA, pins=PINS)
def test_any_index_answer_parses_and_resolves_cleanly(lead: bytes, cubin: bytes, comp: str,
                                                      metadata: bytes,
                                                      pins: tuple[str, ...]) -> None:
    pages = {}
    for name, page in (("kernelpkg", clean_or_pinbump_error(parse_json_page, lead, PAGE,
                                                            "kernelpkg")),
                       ("kernelcubin", clean_or_pinbump_error(parse_json_page, cubin, PAGE,
                                                              "kernelcubin")),
                       ("comp", clean_or_pinbump_error(parse_html_page, comp, PAGE, "comp"))):
        event(f"{name} page {'parsed' if page is not None else 'refused'}")
        if page is not None:
            assert isinstance(page, ProjectPage)
            assert all(f.url.startswith(("http://", "https://")) for f in page.files)
            pages[name] = page
    plan = clean_or_pinbump_error(resolve, pages, metadata, pins)
    event("resolved" if plan is not None else "no plan")
    if plan is not None:
        assert plan.lead == "kernelpkg"
        assert "+" not in plan.lead_target or plan.lead_target == plan.lead_current


@BOUNDED
@given(lead=typed_pages("kernelpkg"), cubin=typed_pages("kernelcubin"),
       comp=typed_pages("comp"), metadata=METADATA, pins=PINS)
def test_any_versions_yanks_and_times_resolve_cleanly(lead: bytes, cubin: bytes, comp: bytes,
                                                      metadata: bytes,
                                                      pins: tuple[str, ...]) -> None:
    parsed = {name: clean_or_pinbump_error(parse_json_page, data, PAGE, name)
              for name, data in (("kernelpkg", lead), ("kernelcubin", cubin), ("comp", comp))}
    pages = {name: page for name, page in parsed.items() if page is not None}
    plan = clean_or_pinbump_error(resolve, pages, metadata, pins)
    event("resolved" if plan is not None else "no plan")
    if plan is not None:
        assert "+" not in plan.lead_target or plan.lead_target == plan.lead_current
        assert len(plan.lead_target) <= 64


@BOUNDED
@given(filename=filenames("kernelpkg"), url=URLS)
def test_any_file_name_is_a_distribution_or_ignored(filename: str, url: str) -> None:
    f = clean_or_pinbump_error(make_file, "kernelpkg", filename, url)
    if f is not None:
        assert f.filename == filename and "/" not in filename and str(f.version)


@BOUNDED
@given(metadata=METADATA)
def test_any_metadata_gives_requirements_or_a_clean_error(metadata: bytes) -> None:
    reqs = clean_or_pinbump_error(parse_requires_dist, metadata)
    if reqs is not None:
        for r in reqs:
            for spec in r.specifier:  # every version in them can be compared
                spec.contains(Version("1.0"), prereleases=True)


def test_strategies_reach_the_cases_they_are_for() -> None:
    """What the generators aim at: a 5000-digit version is an error, a real one parses."""
    import pytest

    with pytest.raises(PinbumpError, match="version has 5000 characters"):
        make_file("kernelpkg", "kernelpkg-" + "1" * 5000 + "-py3-none-any.whl", PAGE)
    assert make_file("kernelpkg", "kernelpkg-1.0-py3-none-any.whl", PAGE) is not None
