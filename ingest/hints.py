"""Hints the user gives beside a log (--model, --accelerator, --devices, --precision, --seq-len): what the log
leaves unstated, or a correction of it.

A name the catalog does not know is kept as printed, unlinked, with a warning naming the nearest ids (linking it
later with `perfledger catalog link` relinks the run); it never refuses the file. A hint for a file already
stored updates that run (ingest.pipeline.restate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

from perfledger import catalog, store
from perfledger.errors import InvalidInput, UnknownId
from perfledger.records import RunConfig
from perfledger.store.runs import catalog_is_empty


@dataclass(frozen=True, slots=True)
class Hints:
    """The overrides to merge into a log's configuration, and what was said about them."""

    config: RunConfig = field(default_factory=RunConfig)
    warnings: tuple[str, ...] = ()
    unlinked: tuple[str, ...] = ()  # "accelerator" / "model": the hint names nothing in the catalog

    @property
    def given(self) -> bool:
        return bool(self.config.stated())


NO_HINTS = Hints()
# the flag that gives each field, for where a hinted field came from
FLAGS = {"model": "--model", "accelerator": "--accelerator", "n_devices": "--devices", "precision": "--precision",
         "seq_len": "--seq-len"}


def hints(model: str | None = None, accelerator: str | None = None, devices: int | None = None,
          precision: str | None = None, seq_len: int | None = None, known: catalog.Catalog | None = None) -> Hints:
    """Hints as typed on the command line or the upload form -> Hints, names resolved with `known` (the store's
    catalog; default: the bundled one); InvalidInput for a count that is not positive, never for a name."""
    for flag, value in (("--devices", devices), ("--seq-len", seq_len)):
        if value is not None and value <= 0:
            raise InvalidInput(f"{flag} must be positive, got {value}")
    warnings: list[str] = []
    unlinked: list[str] = []
    model_id = _resolved("model", lambda n: catalog.resolve_model(n, known), model, warnings, unlinked)
    acc_id = _resolved("accelerator", lambda n: catalog.resolve_accelerator(n, known), accelerator, warnings,
                       unlinked)
    config = RunConfig(
        model=model_id or model, model_as_printed=model,
        accelerator=acc_id, accelerator_as_printed=accelerator,
        n_devices=devices, seq_len=seq_len,
        precision=catalog.normalize_precision(precision) if precision else None,
    )
    if precision and config.precision == "unstated":
        warnings.append(f"--precision {precision!r} is not a precision perfledger knows (fp32, tf32, fp16, bf16, "
                        "fp8); the run's precision stays unstated")
        config = replace(config, precision=None)
    return Hints(config=config, warnings=tuple(warnings), unlinked=tuple(unlinked))


def hints_for(engine: store.Engine, model: str | None = None, accelerator: str | None = None,
              devices: int | None = None, precision: str | None = None, seq_len: int | None = None) -> Hints:
    """hints() with names resolved against the store's catalog (the bundled one for a store never initialised);
    with no name given, the store is not read."""
    if not model and not accelerator:
        return hints(devices=devices, precision=precision, seq_len=seq_len)
    known = None if catalog_is_empty(engine) else store.catalog_record(engine)
    return hints(model=model, accelerator=accelerator, devices=devices, precision=precision, seq_len=seq_len,
                 known=known)


def _resolved(kind: str, resolve: Callable[[str], str], name: str | None, warnings: list[str],
              unlinked: list[str]) -> str | None:
    if not name:
        return None
    try:
        return resolve(name)
    except (UnknownId, InvalidInput) as exc:
        nearest = getattr(exc, "nearest", ()) or ()
        hint = f" (nearest ids: {', '.join(nearest)})" if nearest else ""
        warnings.append(f"{kind} {name!r} is not in the catalog: kept as printed, unlinked{hint}; "
                        f"`python -m perfledger catalog link {name!r} ID` links it later")
        unlinked.append(kind)
        return None


def apply(config: RunConfig, given: Hints) -> RunConfig:
    """`config` with the hints stated in `given` replacing the log's values. An accelerator hint the catalog
    does not know also clears an accelerator id the log gave: the run is then on the hinted device, unlinked."""
    merged = config.merged(given.config)
    if "accelerator" in given.unlinked:
        merged = replace(merged, accelerator=None)
    return merged


def changes(before: RunConfig, after: RunConfig) -> dict[str, tuple[object, object]]:
    """The configuration fields whose value differs: {field: (before, after)}."""
    return {f.name: (getattr(before, f.name), getattr(after, f.name)) for f in fields(RunConfig)
            if getattr(before, f.name) != getattr(after, f.name)}
