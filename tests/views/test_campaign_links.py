"""A campaign's runs lead on: each to its page on Runs, each configuration to its History, and the page names the
command a CI job runs to judge them."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine

from ingest.campaign import import_folder
from perfledger import urlstate
from perfledger.cli import build_parser
from perfledger.views import campaigns, history, links
from perfledger.views.history import HistoryView

CAMPAIGNS = Path(__file__).resolve().parents[1] / "fixtures" / "campaigns"
MLPERF = CAMPAIGNS / "mlperf_v4.0_asustek_esc_n8a_e12_llama2_70b_lora"


def test_a_submission_links_each_run_to_its_page_and_its_configuration_to_a_history_of_its_ten_runs(
        writable_engine: Engine) -> None:
    saved = import_folder(writable_engine, MLPERF).saved
    assert saved is not None
    runs = campaigns.run_views(writable_engine, saved.campaign_id)
    assert [links.to(state).href for _, state in runs] == [links.run(i).href for i in saved.run_ids]
    assert all(label.startswith(f"Run {state.run} · ") for label, state in runs)
    (label, state), = campaigns.history_views(writable_engine, saved.campaign_id)
    assert label.startswith("History of llama2-70b") and (state.model, state.accelerator, state.devices) == (
        "llama2-70b", "h100-sxm", 8)
    opened = urlstate.from_query(HistoryView, links.to(state).query)  # as the link's URL reopens it
    assert sorted(history.table(opened, writable_engine)["run id"].to_list()) == sorted(saved.run_ids)


def test_the_ci_command_the_page_names_is_one_the_cli_takes(writable_engine: Engine) -> None:
    command = campaigns.check_command(7)
    assert command == "python -m perfledger check campaign:7"
    args = build_parser().parse_args(command.split()[3:])
    assert (args.command, args.target) == ("check", "campaign:7")
