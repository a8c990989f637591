"""Who may write from the browser: a dashboard other machines can reach writes nothing without an upload token (the
sidebar says how to enable writing); an empty token is a configuration error said at start; wrong tokens are
slowed for the whole server, so a fresh session meets the wait the last wrong one set."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from perfledger import wrong_tokens
from perfledger.errors import InvalidSetting
from perfledger.settings import load_settings


@pytest.fixture()
def bound_to(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """bound_to(address): the server.address the app reads (as `--server.address` sets it), restored after."""
    before = config.get_option("server.address")
    yield lambda address: config.set_option("server.address", address)
    config.set_option("server.address", before)


def _sidebar(at: AppTest) -> str:
    return "\n".join(c.value for c in at.sidebar.caption)


def test_a_reachable_server_without_a_token_refuses_browser_writes_and_says_how_to_enable_them(
        seeded_url: str, open_page: Callable[..., AppTest], bound_to: Callable[[str], None]) -> None:
    bound_to("0.0.0.0")
    at = open_page("runs")
    assert not at.exception and not at.get("file_uploader")
    assert "Set PERFLEDGER_UPLOAD_TOKEN, or serve on this machine alone (--server.address 127.0.0.1)" in _sidebar(at)
    assert any("Writing from the browser is off" in c.value for c in at.main.caption)


def test_a_reachable_server_with_a_token_asks_for_it_and_a_local_one_writes_freely(
        seeded_url: str, open_page: Callable[..., AppTest], bound_to: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    bound_to("127.0.0.1")
    at = open_page("runs")
    assert at.get("file_uploader") and "Writing from the browser is off" not in _sidebar(at)
    bound_to("0.0.0.0")
    monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", "s3cret-token")
    at = open_page("runs")
    assert not at.get("file_uploader") and at.text_input(key="ru_tok") is not None
    at.text_input(key="ru_tok").input("s3cret-token").run()
    assert at.get("file_uploader") and "Writing from the browser is off" not in _sidebar(at)


def test_an_empty_token_is_a_configuration_error_said_at_start(
        seeded_url: str, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidSetting, match="PERFLEDGER_UPLOAD_TOKEN is set but empty"):
        load_settings({"PERFLEDGER_UPLOAD_TOKEN": ""})
    monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", "")
    at = open_page("runs")
    assert not at.exception and not at.get("file_uploader")
    assert [e.value.replace("\\", "") for e in at.error] == [
        ("PERFLEDGER_UPLOAD_TOKEN is set but empty: set a token, or unset the variable to serve without one "
        "(then only a dashboard on 127.0.0.1 writes)")]


def test_a_fresh_session_meets_the_wait_a_wrong_token_of_another_session_set(
        seeded_url: str, open_page: Callable[..., AppTest], monkeypatch: pytest.MonkeyPatch) -> None:
    server = wrong_tokens.WrongTokens(first_s=2.0)
    monkeypatch.setattr(wrong_tokens, "SERVER", server)
    monkeypatch.setenv("PERFLEDGER_UPLOAD_TOKEN", "s3cret-token")
    first, second = open_page("runs"), open_page("runs")  # two browser sessions of one server
    first.text_input(key="ru_tok").input("wrong-1").run()
    not_before = server.until  # set by the first session's wrong token: 2 s after it was checked
    assert [e.value for e in first.error] == ["Wrong upload token (1 in a row); the next one is checked after 2 s."]
    second.text_input(key="ru_tok").input("wrong-2").run()
    assert time.monotonic() >= not_before  # checked only once the first session's wait had passed
    assert [e.value for e in second.error] == ["Wrong upload token (2 in a row); the next one is checked after 4 s."]
    assert server.wrong == 2


def test_the_servers_record_checks_one_token_per_wait_whatever_the_session() -> None:
    clock = [100.0]
    tries = wrong_tokens.WrongTokens()
    right = "s3cret".__eq__
    assert tries.attempt("a", right, lambda: clock[0]) == wrong_tokens.Attempt(wrong=1)
    assert tries.attempt("b", right, lambda: clock[0]).wait_s == pytest.approx(1.0)  # another session, same wait
    clock[0] += 1.0
    assert tries.attempt("b", right, lambda: clock[0]) == wrong_tokens.Attempt(wrong=2)
    clock[0] += 1.5
    assert not tries.attempt("s3cret", right, lambda: clock[0]).checked  # even the right one waits its turn
    clock[0] += 0.5
    assert tries.attempt("s3cret", right, lambda: clock[0]).right and tries.wrong == 0
