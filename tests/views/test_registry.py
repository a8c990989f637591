"""The page list is defined once: adding a page is one registry entry plus one script, and the app's navigation,
the CLI's export choices, the widget prefixes, export and links all follow from that entry."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from sqlalchemy import Engine
from streamlit.testing.v1 import AppTest

from perfledger import cli, urlstate, views
from perfledger.views import links, registry

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class ExtraView:
    n: int = urlstate.key("n", 3, low=1, high=100)
    problems: tuple[str, ...] = urlstate.problems_field()

    def describe(self) -> str:
        return f"The first {self.n} whole numbers"


def extra_table(state: ExtraView, engine: Engine) -> pl.DataFrame:
    return pl.DataFrame({"i": list(range(state.n))})


EXTRA_SCRIPT = '''
from dataclasses import replace

import streamlit as st

from screens import _ui

PAGE = _ui.this_page(__file__)
state = _ui.page_state(PAGE)
st.title(PAGE.title)
state = replace(state, n=int(st.number_input("Rows", 1, 100, state.n, key=PAGE.key("n"))))
_ui.keep_in_url(state)
table = _ui.compute(PAGE, state, _ui.engine())
_ui.show_table(table)
_ui.download(state, table)
'''


def test_adding_a_page_is_one_registry_entry_and_one_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    script = tmp_path / "extra.py"
    script.write_text(EXTRA_SCRIPT)
    extra = registry.Page("extra", "Extra", ":material/star:", str(script), ExtraView, extra_table, (), "ex_")
    monkeypatch.setenv("PERFLEDGER_DB_URL", f"duckdb:///{tmp_path / 'empty.duckdb'}")
    with monkeypatch.context() as m:
        m.setattr(registry, "PAGES", (*registry.PAGES, extra))
        at = AppTest.from_file(str(ROOT / "dashboard.py"), default_timeout=30).run()
        at.switch_page(str(script))
        at.query_params.update({"n": "2"})
        at.run()
        assert not at.exception, at.exception
        assert at.title[0].value == "Extra" and at.number_input(key="ex_n").value == 2
        assert links.to(ExtraView(n=5)).href == "/extra?n=5"
        assert views.export("extra", "n=4", engine=None, fmt="csv") == b"i\n0\n1\n2\n3\n"  # type: ignore[arg-type]
        importlib.reload(cli)
        try:
            assert cli.main(["export", "extra", "n=2"]) == 0
            assert capsysbinary.readouterr().out == b"i\n0\n1\n"
        finally:
            m.undo()
            importlib.reload(cli)
    assert "extra" not in cli.PAGES


def test_every_registered_page_has_a_script_and_its_own_widget_prefix() -> None:
    prefixes = [p.widget_prefix for p in registry.PAGES]
    assert all((ROOT / p.file).is_file() for p in registry.PAGES)
    assert [Path(p.file).stem for p in registry.PAGES] == [p.slug for p in registry.PAGES]  # see Page.file
    assert len(set(prefixes)) == len(prefixes)
    assert not [(a, b) for a in prefixes for b in prefixes if a != b and b.startswith(a)]
    assert len({p.slug for p in registry.PAGES}) == len(registry.PAGES)


def test_no_other_module_lists_the_pages() -> None:
    """Page scripts find their entry by their own path; nothing outside the registry names a script path or a slug
    to dispatch on, and widget keys are the page's prefix plus a name."""
    scripts = "|".join(re.escape(p.file) for p in registry.PAGES)
    sources = [*ROOT.glob("screens/*.py"), ROOT / "app.py", ROOT / "dashboard.py", ROOT / "perfledger" / "cli.py",
               *(f for f in ROOT.glob("perfledger/views/*.py") if f.name != "registry.py")]
    assert [f.name for f in sources if re.search(scripts, f.read_text())] == []
    assert [f.name for f in ROOT.glob("screens/[!_]*.py") if "SLUG" in f.read_text()] == []
    prefixes = "|".join(p.widget_prefix for p in registry.PAGES)
    literal_keys = re.compile(rf"""key=["']({prefixes})""")
    assert [f.name for f in ROOT.glob("screens/[!_]*.py") if literal_keys.search(f.read_text())] == []


def test_export_choices_and_the_old_constants_are_the_registry() -> None:
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["export", "no-such-page"])
    assert all(cli.build_parser().parse_args(["export", slug]).page == slug for slug in registry.slugs())
    assert cli.PAGES == registry.slugs() == views.SLUGS
    assert views.PAGE_STATES == {p.slug: p.state for p in registry.PAGES}


def test_a_state_of_no_registered_page_is_refused_with_a_sentence() -> None:
    from perfledger.errors import InvalidQuery

    with pytest.raises(InvalidQuery, match="ExtraView is the state of no registered page"):
        links.to(ExtraView())
    with pytest.raises(InvalidQuery, match="unknown page 'nope'; pages: overview, speedups"):
        views.state_from_query("nope", {})
