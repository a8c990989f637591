"""A framework's performance summary as its publisher prints it: one row per configuration with #-GPUs, GBS, MBS,
Sequence Length, TP/PP/CP/EP and its figures (Tokens / sec / GPU, Model TFLOP / sec / GPU), stored one figure a
line. Every relation the row's printed columns allow is checked, with its inputs named: the TFLOPS against the
tokens/s of the same row, the global batch against micro batch x DP x GA (DP derived from the world size where the
row prints none), devices from nodes x devices per node."""

from __future__ import annotations

import polars as pl

from ingest.pipeline import ingest_bytes
from perfledger import store
from perfledger.views.audit import AuditView, table

HEAD = "source_id,locator,Model,System,Precision,#-GPUs,GBS,MBS,Sequence Length,TP,PP,CP,EP,VP,GA,metric,value,unit\n"
ROWS = (  # llama3-70b at 8192: 780 tokens/s/GPU is 375.5 TFLOP/s/GPU (nemo_llm_configs shape)
    "fw,line 5,LLAMA3_70B,H100,BF16,64,128,1,8192,4,8,1,1,5,64",
    "fw,line 6,LLAMA3_70B,H100,BF16,64,128,1,8192,4,4,2,1,5,64",
    "fw,line 7,LLAMA3_70B,H100,BF16,64,256,1,8192,4,8,1,1,5,64",  # GBS 256 is not 1 x 2 x 64
)


def framework_table() -> bytes:
    lines = [f"{row},{metric},{value},\n" for row in ROWS
             for metric, value in (("Tokens / sec / GPU", "780"), ("Model TFLOP / sec / GPU", "375"))]
    return (HEAD + "".join(lines)).encode()


def audited(engine: store.Engine, source: str) -> pl.DataFrame:
    return table(AuditView(), engine).filter(pl.col("source_id") == source).sort("claim_id", "metric")


def test_every_relation_of_a_framework_performance_row_is_checked_with_its_inputs(seeded: store.Engine) -> None:
    ingest_bytes(seeded, framework_table(), "fw.csv")
    audit = audited(seeded, "fw")
    by_row = {(r["locator"], r["metric"]): r for r in audit.join(
        store.results(seeded).select(pl.col("id").alias("claim_id"), "locator"), on="claim_id").to_dicts()}
    for line in ("line 5", "line 6", "line 7"):
        tflops = by_row[(line, "model_tflops_per_device")]
        assert tflops["verdict"] == "consistent" and "seq_len" not in (tflops["reason"] or "")
        assert {k[1] for k in by_row if k[0] == line} == {"model_tflops_per_device", "global_batch"}
    good = by_row[("line 6", "global_batch")]
    assert good["verdict"] == "consistent"
    assert good["relation"] == "global_batch = micro_batch x dp x grad_accum"
    assert "dp 2 derived: dp = n_devices / (tp x pp x cp)" in good["inputs"]
    assert "micro_batch 1" in good["inputs"] and "grad_accum 64" in good["inputs"]
    wrong = by_row[("line 7", "global_batch")]
    assert wrong["verdict"] == "inconsistent" and wrong["recomputed"] == 128


def test_a_printed_dp_is_checked_against_the_world_size(seeded: store.Engine) -> None:
    text = ("source_id,locator,model,accelerator,n_devices,tp,pp,cp,dp,MBS,GBS,GA,seq_len,metric,value,unit\n"
            "zoo,l1,llama3-70b,h100-sxm,256,2,8,1,16,1,2048,128,4096,step time,19.7,s\n"
            "zoo,l2,llama3-70b,h100-sxm,256,2,8,1,8,1,2048,128,4096,step time,19.7,s\n")  # 2 x 8 x 8 is 128
    ingest_bytes(seeded, text.encode(), "zoo.csv")
    audit = audited(seeded, "zoo")
    dp = audit.filter(pl.col("metric") == "dp")
    assert dp["verdict"].to_list() == ["consistent", "inconsistent"]
    assert dp["relation"].to_list() == ["dp = n_devices / (tp x pp x cp)"] * 2
    batch = audit.filter(pl.col("metric") == "global_batch")
    assert batch["verdict"].to_list() == ["consistent", "inconsistent"]  # its printed DP, not a derived one


def test_devices_are_nodes_times_devices_per_node_where_the_row_prints_no_device_count(seeded: store.Engine) -> None:
    text = ("source_id,locator,model,accelerator,Nodes,GPUs per node,GBS,Sequence length,metric,value,unit\n"
            "nodes,l1,llama3-70b,h100-sxm,8,8,512,4096,step time,8.0,s\n"
            "nodes,l1,llama3-70b,h100-sxm,8,8,512,4096,Tokens/s/GPU,4096,\n")  # 512 x 4096 / 8 / 64
    ingest_bytes(seeded, text.encode(), "nodes.csv")
    audit = audited(seeded, "nodes").filter(pl.col("metric") == "tokens_per_s_per_device")
    assert audit["verdict"].to_list() == ["consistent"]
    assert "n_devices 64 derived: n_devices = n_nodes x devices_per_node" in audit["inputs"].item()


def test_a_speedup_is_judged_against_the_tables_baseline_row(seeded: store.Engine) -> None:
    text = ("source_id,locator,model,accelerator,n_devices,Recipe,metric,value,unit\n"
            "sp,l1,llama3-70b,h100-sxm,64,BF16 baseline,Tokens / sec / GPU,1000,\n"
            "sp,l1,llama3-70b,h100-sxm,64,BF16 baseline,Speedup,1.00x,\n"
            "sp,l2,llama3-70b,h100-sxm,64,FP8 current scaling,Tokens / sec / GPU,1350,\n"
            "sp,l2,llama3-70b,h100-sxm,64,FP8 current scaling,Speedup,1.35x,\n"
            "sp,l3,llama3-70b,h100-sxm,64,FP8 blockwise,Tokens / sec / GPU,1400,\n"
            "sp,l3,llama3-70b,h100-sxm,64,FP8 blockwise,Speedup,1.6x,\n")  # 1400 / 1000 is 1.4x
    ingest_bytes(seeded, text.encode(), "sp.csv")
    audit = audited(seeded, "sp").filter(pl.col("metric") == "relative_throughput")
    assert audit["verdict"].to_list() == ["consistent", "inconsistent"]
    assert audit["recomputed"].to_list() == [1.35, 1.4]
    assert set(audit["relation"]) == {("relative_throughput = tokens_per_s_per_device / tokens_per_s_per_device "
                                       "of the baseline row (the row printing 1x)")}
    assert all("tokens_per_s_per_device 1,000" in text for text in audit["inputs"])
