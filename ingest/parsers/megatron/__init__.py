"""Megatron-LM family stdout: fields (what a line holds), scan (chunk -> segments, no state), config (the run's
configuration), frame (segments -> step rows), parser (MegatronParser, the order of it all)."""

from ingest.parsers.megatron.parser import PARSER, MegatronParser

__all__ = ["PARSER", "MegatronParser"]
