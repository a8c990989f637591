"""A training log pasted into a document (a README's ``` fences, a docs page's `.. code:: text` block) is read as
the log its code blocks hold, de-indented, the prose ignored, through ingest -> store; a document with no log in its
code blocks is refused with the same plain sentence as any file no format reads. Real pages from
tests/fixtures/heldout (PROVENANCE.md) and small pages of the same grammar with their labels respelled."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from ingest.documents import code_view
from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.errors import UnknownFormat
from tests.conftest import ROOT
from tests.ingest.parsers.helpers import stored_step_time

HELDOUT = ROOT / "tests" / "fixtures" / "heldout"
XTUNER = HELDOUT / "xtuner_quickstart_zh_cn_legacy.rst"
OLMO = HELDOUT / "olmo_1b_ndv5_aks_readme.md"

MMENGINE_LINES = [f"{i // 6 + 10:02d}/29 21:{i:02d}:00 - mmengine - INFO - Iter(train) [{10 * i:3d}/200]  "
                  f"lr: 1.0e-04  eta: 0:10:00  time: {t}  data_time: 0.0070  memory: 13969  loss: 2.{i:02d}"
                  for i, t in enumerate(["3.1000", "2.5000", "2.5000", "2.5000", "2.5000", "2.5000", "2.5000",
                                         "2.5000", "2.5000", "2.5000"], start=1)]


def test_the_mmengine_log_in_a_restructuredtext_code_block_gives_its_own_step_time(empty_engine: Engine) -> None:
    assert stored_step_time(empty_engine, XTUNER.read_bytes(), XTUNER.name) == pytest.approx(2.7286, rel=0.01)


def test_the_olmo_log_in_markdown_fences_is_read_with_its_steps(empty_engine: Engine) -> None:
    outcome = ingest_bytes(empty_engine, OLMO.read_bytes(), OLMO.name)
    assert outcome.run_id is not None
    steps = store.steps(empty_engine, outcome.run_id)
    assert steps.height >= 9 * 9 and steps["step"].max() == 10
    assert outcome.summary.reported.get("reported_tokens_per_s_per_device") is not None


@pytest.mark.parametrize("page", [
    "Training\n========\n\nRun it and you see::\n\n{log}\n\nThat is all.\n",
    "Training\n--------\n\n.. code-block:: console\n   :linenos:\n\n{log}\n\nMore prose: time: 9.9 loss: 1.0.\n",
    "# Training\n\nThe log:\n\n```text\n{log}\n```\n\nEnd.\n",
    "# Training\n\n  ~~~\n{log}\n  ~~~\n",
], ids=["rst-literal", "rst-code-block", "md-backticks", "md-tildes"])
def test_a_log_indented_in_any_code_block_form_reads_the_same_figures(empty_engine: Engine, page: str) -> None:
    plain = "\n".join(MMENGINE_LINES).encode()
    indented = "\n".join("    " + line for line in MMENGINE_LINES)
    raw = page.replace("{log}", indented).encode()
    assert stored_step_time(empty_engine, raw, "page.txt") == stored_step_time(empty_engine, plain, "plain.log") == 2.5


def test_the_view_keeps_the_documents_line_numbers() -> None:
    text = "Intro::\n\n   a: 1\n   b: 2\n\nprose\n"
    view = code_view(text)
    assert view is not None and view.split("\n") == ["", "", "a: 1", "b: 2", "", "", ""]


def test_a_section_underline_of_tildes_is_no_fence() -> None:
    assert code_view("Title\n~~~~~\n\nprose only\n\nOther\n~~~~~\n\nmore prose\n") is None


def test_a_markdown_page_with_no_log_in_its_code_blocks_is_refused_plainly(empty_engine: Engine) -> None:
    page = b"# Setup\n\nInstall it:\n\n```bash\npip install torch\ntorchrun --nproc_per_node 8 train.py\n```\n\nDone.\n"
    with pytest.raises(UnknownFormat, match=r"^README\.md: not a log format perfledger reads"):
        ingest_bytes(empty_engine, page, "README.md")
    assert store.runs(empty_engine).height == 0
