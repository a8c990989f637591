"""The only definition of perfledger's tables (SQLAlchemy Core); `init`, tests and the store import it.

Tidy: one reported or measured number per `result` row. Column types are portable between DuckDB and
PostgreSQL; JSON travels as Text so both engines store the same bytes.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

source = Table(
    "source",
    metadata,
    Column("id", String, primary_key=True),
    Column("kind", String, nullable=False),  # vocabulary.SourceKind
    Column("title", Text, nullable=False),
    Column("publisher", Text),
    Column("date", String),  # as published: "2023-12", "2024-05-14", free text kept in note
    Column("url", Text),
    Column("evidence", Text),  # how direct the source is, e.g. "primary (vendor claim)"
    Column("note", Text),
)

accelerator = Table(
    "accelerator",
    metadata,
    Column("id", String, primary_key=True),
    Column("vendor", String, nullable=False),
    Column("name", String, nullable=False),
    Column("form", String),
    Column("memory_gb", Float),
    Column("mem_bw_tbps", Float),
    Column("fp32_tflops", Float),  # dense peaks per `unit_basis`, never with sparsity
    Column("tf32_tflops", Float),
    Column("fp16_tflops", Float),
    Column("bf16_tflops", Float),
    Column("fp8_tflops", Float),
    Column("tdp_w", Float),
    Column("unit_basis", String, nullable=False),  # "GPU" | "package" | "GCD" | "chip" | "IPU" | "RDU" | "system"
    Column("devices_per_package", Integer),  # 2 for MI250/MI250X: a framework device is one GCD
    Column("interconnect", Text),
    Column("source_id", String),
    Column("evidence", Text),
    Column("note", Text),
    Column("aliases", Text),  # printed names, " | "-separated; "NAME [NOTE]" resolves with that note (a default)
    Column("colour", String),  # "#rrggbb" on every chart; empty: the charts' fallback grey
)

model = Table(
    "model",
    metadata,
    Column("id", String, primary_key=True),
    Column("family", String, nullable=False),
    Column("name", String, nullable=False),
    Column("params", Float),  # total parameters (count, not billions)
    Column("active_params", Float),  # MoE: parameters used per token
    Column("layers", Integer),
    Column("hidden", Integer),
    Column("heads", Integer),
    Column("kv_heads", Integer),
    Column("ffn_hidden", Integer),
    Column("vocab", Integer),
    Column("ffn_kind", String),  # "gelu" | "swiglu"
    Column("moe_experts", Integer),
    Column("moe_top_k", Integer),
    Column("seq_len", Integer),  # default sequence length
    Column("tied_embeddings", Boolean),
    Column("source_id", String),
    Column("note", Text),
    Column("aliases", Text),  # printed names, " | "-separated, as on the accelerator table
    Column("head_dim", Integer),  # attention head width when heads x head_dim is not hidden (Qwen3, Gemma)
    Column("shape_detail", Text),  # "key=value; ..." a FLOPs count needs beyond these columns (calc/shape_detail.py)
)

run = Table(
    "run",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("content_sha256", String(64), nullable=False, unique=True),
    Column("format", String, nullable=False),
    Column("file_name", Text, nullable=False),
    Column("file_bytes", BigInteger),  # logs over 2 GiB exist
    Column("ingested_at", DateTime(timezone=True), nullable=False),
    Column("config", Text, nullable=False),  # JSON: RunConfig.stated() plus format extras
    Column("warnings", Text, nullable=False),  # JSON list of sentences
    Column("summary", Text),  # JSON: steady-state window, rule parameters and figures
    Column("n_steps", BigInteger, nullable=False),  # 64-bit, as every step number (perfledger.store.upgrade)
    Column("skipped_lines", BigInteger, nullable=False),
    Column("source_id", String),
    Column("note", Text),
    # --- run date: when the run ran, by the log's own clock (perfledger.store.upgrade adds it to older stores) ---
    Column("ran_at", DateTime(timezone=True)),  # null: the log printed no date; the ingest date stands in
    # --- end run date ---
)

step = Table(
    "step",
    metadata,
    Column("run_id", Integer, nullable=False),
    Column("step", BigInteger, nullable=False),  # logs count steps past 2**31 (a global sample index, say)
    Column("step_time_s", Float),
    Column("tokens", Float),
    Column("samples", Float),
    Column("loss", Float),
    Column("lr", Float),
    Column("grad_norm", Float),
    Column("reported_tflops_per_device", Float),
    Column("reported_mfu", Float),
    Column("reported_tokens_per_s_per_device", Float),
    Column("memory_gb", Float),
    Column("launch", Integer),  # launch number within the file; null for a log of one launch
    Column("generation_s", Float),  # RLHF: the step's generation part, as printed
    Column("training_s", Float),  # RLHF: the step's training part, as printed
    Column("clock_s", Float),  # a progress bar's clock at the step (tqdm's elapsed); see perfledger.calc.clock
    # PostgreSQL reads a run's steps through it. DuckDB finds them as fast from its per-row-group min/max
    # (4.4 ms for a 10k-step run of 10M rows with or without it), and maintaining it cost 40% of an ingest's
    # insert time and 57% more file size; stores made before this still have it, harmlessly.
    Index("ix_step_run", "run_id", "step").ddl_if(dialect="postgresql"),
)

result = Table(
    "result",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("row_key", String(64), nullable=False, unique=True),  # sha256 of the row's content: idempotence
    Column("source_id", String),
    Column("run_id", Integer),
    Column("accelerator_id", String),
    Column("accelerator_as_printed", Text),
    Column("n_devices", Integer),
    Column("framework", String),
    Column("framework_version", String),
    Column("model_id", String),
    Column("model_as_printed", Text),
    Column("workload", String),
    Column("precision", String),
    Column("seq_len", Integer),
    Column("global_batch", Integer),
    Column("micro_batch", Integer),
    Column("grad_accum", Integer),
    Column("tp", Integer),
    Column("pp", Integer),
    Column("dp", Integer),
    Column("ep", Integer),
    Column("cp", Integer),
    Column("strategy", String),
    Column("sparsity", Float),
    Column("metric", String, nullable=False),
    Column("value", Float),  # null only under metric "printed": a claims cell that is not a number, kept as printed
    Column("unit", String, nullable=False),
    Column("evidence", String, nullable=False),
    Column("locator", Text),
    Column("note", Text),
    Column("baseline", Text),
    Column("precision_as_printed", Text),  # the precision text a claims file printed ("MXFP8", "Float8")
    Column("attributes", Text),  # JSON object: every further configuration column a claims file carried
    Column("printed", Text),  # JSON object: a claims row's cells the vocabulary reads, as printed (claim_cells.Cells)
    Column("unread", Text),  # JSON object: field -> cell the vocabulary could not read yet (the resolve queue)
    Index("ix_result_metric_model", "metric", "model_id"),
    Index("ix_result_run", "run_id"),
)

# --- campaigns: a folder of runs imported together (perfledger.store.campaigns) -------------------------------------
campaign = Table(
    "campaign",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("content_sha256", String(64), nullable=False, unique=True),  # of its files' names and hashes: idempotence
    Column("name", Text, nullable=False),  # the folder's name
    Column("kind", String, nullable=False),  # "mlperf" | "sweep" | "job table" | "folder"
    Column("imported_at", DateTime(timezone=True), nullable=False),
    Column("meta", Text, nullable=False),  # JSON: system description, submission keys, config files, refusals
    Column("score", Float),  # the campaign's score under score_rule; null when the rule cannot score it
    Column("score_unit", String),
    Column("score_rule", Text),  # the rule in words, with its source
    Column("score_note", Text),  # why there is no score, or what it rests on
)

# One row per attempt in a campaign: a stored run (run_id) or a failure kept with its reason, never dropped.
outcome = Table(
    "outcome",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("campaign_id", Integer, nullable=False),
    Column("run_id", Integer),  # null for an attempt with nothing to store (a job-table row, a log with no steps)
    Column("file_name", Text, nullable=False),  # path inside the folder; a job table's rows: "jobs.sqlite3#JOB"
    Column("line", BigInteger),  # where the reason was read
    Column("kind", String, nullable=False),  # vocabulary: completed | oom | timeout | cancelled | nan | no_steps | failed
    Column("reason", Text),
    Column("configuration", Text, nullable=False),  # JSON: what makes repeats repeats (model, devices, layout ...)
    Column("metric", String),  # the attempt's headline figure: time_to_train_s, tokens_per_s_per_device, step_time_s
    Column("value", Float),
    Column("unit", String),
    Index("ix_outcome_campaign", "campaign_id"),
)
CAMPAIGN_TABLES = (campaign, outcome)
# --- end of campaigns ------------------------------------------------------------------------------------------------

# --- corrections: a run's identity corrected by hand, kept with its time and reason (perfledger.store.corrections) ---
correction = Table(
    "correction",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, nullable=False),
    Column("field", String, nullable=False),  # a RunConfig field: model, accelerator, n_devices, precision, ...
    Column("before", Text),  # JSON: the value before (null: not stated)
    Column("after", Text),  # JSON: the value after
    Column("reason", Text),
    Column("corrected_at", DateTime(timezone=True), nullable=False),
    Index("ix_correction_run", "run_id"),
)
LATER_TABLES = (*CAMPAIGN_TABLES, correction)  # tables a store of an earlier release gets at its first write
# --- end of corrections ----------------------------------------------------------------------------------------------

TABLES = (source, accelerator, model, run, step, result, *CAMPAIGN_TABLES, correction)

# One row: a random stamp each write transaction sets anew (perfledger.store.stamp), so an answer computed from
# the store can be remembered until any process writes to it.
store_stamp = Table("store_stamp", metadata, Column("stamp", String(32), nullable=False))
