"""python -m ingest: training logs and result files -> typed records -> the perfledger store."""
