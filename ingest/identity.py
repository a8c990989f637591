"""A run's identity from everything its log says: what its reader read, what its configuration lines state
(ingest.config_lines), and what follows from them, each field with where it came from.

For every field the reader's value comes first; a configuration line that states another value is kept and named
in a warning, never dropped in silence. A field the reader leaves empty takes what the lines state (the most often
stated value; two values are both named), else what follows from other fields (devices = nodes x devices per
node, or data-parallel size x model-parallel sizes from the batch; global batch = micro batch x accumulation x
data-parallel size), else a weak count (per-rank lines), else stays empty. The model is a catalog id only when
every name the log gives that the catalog knows names the same model (a run name, a class path, a model path;
`perfledger.catalog.model_in_name`); two models are asked of the user, kept as printed, unlinked.

Each identity field with a value gets `{"from": "log" | "default", "where": ...}` (hints add "hint" later): the
stored run configuration's `identity`. A workload the log does not state is "pretrain" marked `default`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ingest.config_lines import Statement
from perfledger import catalog
from perfledger.frameworks import Frameworks
from perfledger.quantities import workload_in
from perfledger.records import RunConfig

IDENTITY_FIELDS = ("model", "accelerator", "n_devices", "precision", "seq_len", "global_batch", "micro_batch",
                   "grad_accum", "workload", "framework")
_SHAPE = ("num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_kv_heads", "num_experts",
          "moe_top_k")
_COUNTS = ("seq_len", "global_batch", "micro_batch", "grad_accum", "tp", "pp", "cp", "ep", "n_devices")
_LABELS = {"seq_len": "sequence lengths", "global_batch": "global batch sizes", "micro_batch": "micro batch sizes",
           "grad_accum": "gradient accumulation steps", "n_devices": "device counts", "tp": "tensor parallel sizes",
           "pp": "pipeline parallel sizes", "cp": "context parallel sizes", "ep": "expert parallel sizes",
           "precision": "precisions", "accelerator": "accelerators"}
_PRECISION_WORDS = (("fp8", ("fp8", "float8", "e4m3", "e5m2", "hybrid")), ("bf16", ("bf16", "bfloat16")),
                    ("fp16", ("fp16", "float16", "half", "16-mixed", "16_mixed", "amp_fp16")),
                    ("fp32", ("fp32", "float32", "32-true", "32_true", "full")))
Provenance = dict[str, dict[str, Any]]
HOST_NAME = "host_name"  # a configuration row's unit: a host or node name an accelerator may be read from


@dataclass(frozen=True, slots=True)
class Identity:
    config: RunConfig
    provenance: Provenance
    warnings: tuple[str, ...] = ()


def precision_of(text: str) -> str | None:
    """A precision as printed ("bf16-mixed", "Precision.AMP_BF16", "bfloat16", "true" for an fp8 flag) -> fp8,
    bf16, fp16 or fp32."""
    low = text.lower()
    return next((p for p, words in _PRECISION_WORDS if any(w in low for w in words)), None)


def workload_of(text: str) -> str | None:
    """A workload as printed ("lora_finetune", "peft: lora", "ppo", "SFTTrainer") -> its Workload value
    (perfledger.quantities.workload_in): lora_finetune, rlhf, sft or pretrain."""
    found = workload_in(text)
    return found.value if found is not None else None


@dataclass(slots=True)
class _Resolver:
    reader: str  # the format that read the log, for "read by the ... reader"
    parsed: RunConfig
    stated: list[Statement]
    values: dict[str, Any]
    provenance: Provenance
    warnings: list[str]

    def of(self, field: str, *, weak: bool = False) -> list[Statement]:
        return [s for s in self.stated if s.field == field and s.weak == weak]

    def set(self, field: str, value: Any, where: str, **extra: Any) -> None:
        self.values[field] = value
        self.provenance[field] = {"from": "log", "where": where} | extra

    def by_reader(self, field: str, value: Any = None) -> str:
        """Where the reader's value is stated: the first line stating it, else the reader."""
        value = self.values.get(field) if value is None else value
        agreeing = next((s.where for s in self.stated if s.field == field and not s.weak and s.value == value), None)
        return agreeing or f"read by the {self.reader} reader"

    def two_values(self, field: str, chosen: Any, others: list[Statement], chosen_where: str) -> None:
        if not others:
            return
        named = "; ".join(f"{s.value} ({s.where})" for s in others[:3])
        self.warnings.append(f"the log states more than one of its {_LABELS.get(field, field)}: {chosen} "
                             f"({chosen_where}) is used; also stated: {named}")
        self.provenance[field]["also"] = [{"value": s.value, "where": s.where} for s in others[:3]]

    def count(self, field: str) -> None:
        """A count field: the reader's, else the most often stated (the other values named)."""
        stated = self.of(field)
        if self.values.get(field) is not None:
            self.provenance[field] = {"from": "log", "where": self.by_reader(field)}
            self.two_values(field, self.values[field], [s for s in stated if s.value != self.values[field]],
                            self.provenance[field]["where"])
        elif stated:
            chosen = max(stated, key=lambda s: s.times)
            self.set(field, chosen.value, chosen.where)
            self.two_values(field, chosen.value, [s for s in stated if s is not chosen], chosen.where)

    def first(self, field: str) -> Statement | None:
        stated = self.of(field)
        return max(stated, key=lambda s: s.times) if stated else None


def resolve(parsed: RunConfig, statements: Iterable[Statement], *, reader: str, frameworks: Frameworks,
            scope: tuple[str, ...] = ()) -> Identity:
    """The run's configuration from its reader's `parsed` fields and the log's `statements`, with provenance."""
    scope = tuple(dict.fromkeys((*([parsed.framework] if parsed.framework else []), *scope)))
    own_keys = {row.key for row in frameworks.config_keys if row.framework in scope}  # their meaning, not the generic
    stated = [s for s in statements if s.framework in scope or (s.framework == "*" and s.key not in own_keys)]
    r = _Resolver(reader, parsed, stated, {f.name: getattr(parsed, f.name) for f in fields(RunConfig)}, {}, [])
    for field in ("seq_len", "micro_batch", "grad_accum", "global_batch", "tp", "pp", "cp", "ep", "dp",
                  "printed_window", *_SHAPE):
        r.count(field)
    if not (r.values["num_experts"] or 0) > 1:  # a dense model's dump prints the MoE defaults too
        r.values["moe_top_k"] = parsed.moe_top_k
        r.provenance.pop("moe_top_k", None)
    _devices(r)
    _batch(r)
    _precision(r)
    _accelerator(r)
    _model(r)
    _workload(r, frameworks, scope)
    _framework(r, scope)
    _version(r)
    config = RunConfig(**{f.name: r.values[f.name] for f in fields(RunConfig)})
    provenance = {k: v for k, v in r.provenance.items() if k in IDENTITY_FIELDS
                  and (r.values.get(k) is not None or r.values.get(f"{k}_as_printed") is not None)}
    return Identity(config, provenance, tuple(dict.fromkeys(r.warnings)))


def _devices(r: _Resolver) -> None:
    r.count("n_devices")
    if r.values["n_devices"] is not None:
        return
    nodes, per_node = r.first("nodes"), r.first("devices_per_node")
    if nodes is not None and per_node is not None:
        r.set("n_devices", int(nodes.value) * int(per_node.value),
              f"derived: {nodes.value} nodes x {per_node.value} devices per node ({nodes.where}; {per_node.where})")
        return
    if (dp := r.first("dp")) is not None and r.values["dp"] == dp.value:
        r.set("n_devices", int(dp.value) * _model_parallel(r), f"derived: data-parallel size {dp.value} "
              f"({dp.where}){_times_model_parallel(r)}")
        return
    gbs, micro, accum = r.values["global_batch"], r.values["micro_batch"], r.values["grad_accum"]
    if gbs and micro and accum and gbs % (micro * accum) == 0:
        model_parallel = [(name, r.values[name]) for name in ("tp", "pp", "cp") if r.values[name]]
        size = 1
        for _, n in model_parallel:
            size *= n
        unstated = [name for name in ("tp", "pp", "cp") if not r.values[name]]
        r.set("n_devices", gbs // (micro * accum) * size,
              f"derived: global batch {gbs} / (micro batch {micro} x accumulation {accum})"
              + (f" x {' x '.join(f'{n} {v}' for n, v in model_parallel)}" if model_parallel else "")
              + (f"; {', '.join(unstated)} not stated: taken as 1" if unstated else ""))
        return
    weak = [s for s in r.of("n_devices", weak=True) if isinstance(s.value, int) and s.value > 1]
    if weak:
        chosen = max(weak, key=lambda s: s.times)
        r.set("n_devices", chosen.value, f"counted: {chosen.where}" + (
            f" (the most often printed of {len(weak)} counts)" if len(weak) > 1 else ""))


def _model_parallel(r: _Resolver) -> int:
    return int((r.values["tp"] or 1) * (r.values["pp"] or 1) * (r.values["cp"] or 1))


def _times_model_parallel(r: _Resolver) -> str:
    """" x tp 2 x pp 4; cp not stated: taken as 1", what multiplies a data-parallel size into devices."""
    stated = [f"{name} {r.values[name]}" for name in ("tp", "pp", "cp") if r.values[name]]
    unstated = [name for name in ("tp", "pp", "cp") if not r.values[name]]
    return (f" x {' x '.join(stated)}" if stated else "") + (
        f"; {', '.join(unstated)} not stated: taken as 1" if unstated else "")


def _batch(r: _Resolver) -> None:
    v = r.values
    dp = _data_parallel(v)
    if v["global_batch"] is None and v["micro_batch"] and v["grad_accum"] and dp:
        r.set("global_batch", v["micro_batch"] * v["grad_accum"] * dp,
              f"derived: micro batch {v['micro_batch']} x accumulation {v['grad_accum']} x data-parallel size {dp}")
    if (tokens := r.first("tokens_per_step")) is not None:
        r.set("tokens_per_step", int(tokens.value), tokens.where)
        if v["global_batch"] is None and v["seq_len"] and int(tokens.value) % v["seq_len"] == 0:
            r.set("global_batch", int(tokens.value) // v["seq_len"],
                  f"derived: {tokens.value} tokens per step / sequence length {v['seq_len']} ({tokens.where})")
    if v["grad_accum"] is None and v["global_batch"] and v["micro_batch"] and dp \
            and v["global_batch"] % (v["micro_batch"] * dp) == 0:
        r.set("grad_accum", v["global_batch"] // (v["micro_batch"] * dp),
              f"derived: global batch {v['global_batch']} / (micro batch {v['micro_batch']} x data-parallel size {dp})")


def _data_parallel(v: Mapping[str, Any]) -> int | None:
    if v["dp"]:
        return int(v["dp"])
    if not v["n_devices"]:
        return None
    size = (v["tp"] or 1) * (v["pp"] or 1) * (v["cp"] or 1)
    return v["n_devices"] // size if v["n_devices"] % size == 0 else None


def _precision(r: _Resolver) -> None:
    read = [(p, s) for s in r.of("precision") if (p := precision_of(str(s.value))) is not None]
    if r.values["precision"] is not None:
        r.provenance["precision"] = {"from": "log", "where": next(
            (s.where for p, s in read if p == r.values["precision"]), f"read by the {r.reader} reader")}
        return
    if not read:
        return
    fp8 = next((s for p, s in read if p == "fp8"), None)  # fp8 runs on top of a bf16 or fp16 setting
    if fp8 is not None:
        r.set("precision", "fp8", fp8.where)
        return
    counts = Counter(p for p, _ in read)
    chosen = counts.most_common(1)[0][0]
    where = next(s.where for p, s in read if p == chosen)
    r.set("precision", chosen, where)
    r.two_values("precision", chosen, [s for p, s in read if p != chosen], where)


def _accelerator(r: _Resolver) -> None:
    printed = r.values["accelerator_as_printed"] or r.values["accelerator"]
    own = catalog.resolve_or_none("accelerator", printed) if printed else None
    named = [(found, s) for s in r.of("accelerator") if s.unit != HOST_NAME
             and (found := catalog.resolve_or_none("accelerator", str(s.value))) is not None]
    ids = list(dict.fromkeys(found for found, _ in named))
    if ids and own not in ids:
        chosen, where = ids[0], next(s for f, s in named if f == ids[0])
        r.set("accelerator", chosen, where.where)
        r.values["accelerator_as_printed"] = str(where.value)
        if own is not None or printed:
            r.warnings.append(f"the log's device lines name {where.value} ({where.where}), not {printed!r} as its "
                              f"{r.reader} lines do: {chosen} is used")
    elif printed:
        r.provenance["accelerator"] = {"from": "log", "where": next(
            (s.where for f, s in named if f == own), f"read by the {r.reader} reader")}
    elif (first := next((s for s in r.of("accelerator") if s.unit != HOST_NAME), None)) is not None:
        r.set("accelerator", str(first.value), first.where)
        r.values["accelerator_as_printed"] = str(first.value)
    else:
        _accelerator_in_host_name(r)
    if len(ids) > 1:
        r.warnings.append("the log names several accelerators: " + "; ".join(
            f"{s.value} ({s.where})" for _, s in named[:3]))


def _accelerator_in_host_name(r: _Resolver) -> None:
    """With no device line, the accelerator a host, node or cluster name names, when its names agree on exactly
    one (never a guess: two, or none the catalog knows, leave it unstated); said in the warnings."""
    hosts = [s for s in r.of("accelerator") if s.unit == HOST_NAME]
    matched = [(m, s) for s in hosts if (m := catalog.accelerator_in_name(str(s.value))) is not None]
    if len({m.id for m, _ in matched}) != 1:
        return
    match, where = matched[0]
    r.set("accelerator", match.id, where.where, read_from="host name")
    r.values["accelerator_as_printed"] = match.part
    r.warnings.append(f"the accelerator is read from a host name, not a device line: {str(where.value)!r} "
                      f"({where.where}) names {match.id} ({match.part!r}); correct it with `runs set` if the "
                      "host's name says otherwise")


def _model(r: _Resolver) -> None:
    printed = r.values["model_as_printed"] or r.values["model"]
    candidates = ([(printed, r.by_reader("model", printed), "name")] if printed else []) + [
        (str(s.value), s.where, "name" if s.field == "model" and s.unit != "hint_name" else "hint_name")
        for s in r.of("model") + r.of("run_name")]
    matched = [(m, text, where) for text, where, _ in candidates
               if (m := catalog.model_in_name(text)) is not None]
    ids = list(dict.fromkeys(m.id for m, _, _ in matched))
    if len(ids) == 1:
        m, text, where = matched[0]
        r.set("model", m.id, where, confidence=m.confidence)
        r.values["model_as_printed"] = text
        _check_shape(r, m.id)
    elif len(ids) > 1:
        names = "; ".join(f"{text} ({where}: {m.id})" for m, text, where in matched[:4])
        r.warnings.append(f"the log names more than one model ({names}): kept as printed, unlinked; "
                          "`python -m perfledger runs set RUN model=ID` says which")
        r.values["model"] = None
        r.values["model_as_printed"] = " | ".join(dict.fromkeys(text for _, text, _ in matched))
        r.provenance["model"] = {"from": "log", "where": names, "confidence": "ambiguous"}
    elif printed:
        r.provenance["model"] = {"from": "log", "where": r.by_reader("model", printed),
                                 "confidence": "not in the catalog"}
    elif (named := next(((t, w) for t, w, unit in candidates if unit == "name"), None)) is not None:
        r.values["model"] = r.values["model_as_printed"] = named[0]
        r.provenance["model"] = {"from": "log", "where": named[1], "confidence": "not in the catalog"}


def _check_shape(r: _Resolver, model_id: str) -> None:
    """A model named by the log whose printed architecture is another one's: said, not silently taken."""
    row = catalog.bundled_catalog().rows("model").get(model_id)
    if row is None:
        return
    pairs = (("num_layers", "layers"), ("hidden_size", "hidden"), ("num_attention_heads", "heads"))
    differ = [f"{ours} {r.values[ours]} (catalog {row.get(theirs)})" for ours, theirs in pairs
              if r.values[ours] and row.get(theirs) not in (None, "") and int(row[theirs]) != r.values[ours]]
    if differ:
        r.warnings.append(f"the log names {model_id} but prints another architecture: {', '.join(differ)}")


def _workload(r: _Resolver, frameworks: Frameworks, scope: tuple[str, ...]) -> None:
    said = [(w, s) for s in r.of("workload") if (w := workload_of(str(s.value))) is not None]
    if said:
        r.set("workload", said[0][0], said[0][1].where)
    elif r.values["workload"] is not None:
        r.values["workload"] = workload_of(str(r.values["workload"])) or r.values["workload"]
        r.provenance["workload"] = {"from": "log", "where": f"read by the {r.reader} reader"}
    elif (row := next((row for f in scope for row in frameworks.of(f) if row.workload), None)) is not None:
        r.set("workload", row.workload, f"{row.framework} trains only this workload ({row.note})")
    else:
        r.values["workload"] = "pretrain"
        r.provenance["workload"] = {"from": "default", "where": "the log states no workload: pretraining assumed"}


def _framework(r: _Resolver, scope: tuple[str, ...]) -> None:
    if r.values["framework"] is not None:
        r.provenance["framework"] = {"from": "log", "where": f"read by the {r.reader} reader"}
    elif scope:
        r.set("framework", scope[0], "recognised by its lines or the keys it logs (data/frameworks.csv, "
                                     "data/metric_keys.csv)")


def _version(r: _Resolver) -> None:
    if r.values["framework_version"] is None and (first := r.first("framework_version")) is not None:
        r.values["framework_version"] = str(first.value)


# What a reader says when it found no device count; not so once the log's other lines stated one.
_NO_DEVICES = ("world size not stated", "the device count is unknown")
_NO_ACCELERATOR = ("the accelerator is not stated",)


def still_true(warnings: tuple[str, ...], parsed: RunConfig, read: Identity) -> tuple[str, ...]:
    """A reader's warnings, less those the whole log's identity answered (a device count or an accelerator found
    in its other lines)."""
    by_lines = {f for f, said in read.provenance.items() if not said["where"].startswith("read by")}
    answered = (_NO_DEVICES if parsed.n_devices is None and read.config.n_devices is not None else ()) + (
        _NO_ACCELERATOR if "accelerator" in by_lines and read.config.accelerator else ())
    return tuple(w for w in warnings if not any(phrase in w for phrase in answered))


def merged_provenance(before: Provenance, changed: Iterable[str], given: RunConfig, flags: Mapping[str, str]) -> \
        Provenance:
    """`before` with each field a hint changed marked as the user's hint."""
    out = dict(before)
    for field in changed:
        if field in IDENTITY_FIELDS and getattr(given, field) is not None:
            out[field] = {"from": "hint", "where": f"{flags.get(field, '--' + field)} {getattr(given, field)}"}
    return out


def with_values(config: RunConfig, **values: Any) -> RunConfig:
    return replace(config, **values)
