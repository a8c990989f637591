"""perfledger: a ledger of LLM-training performance figures, recomputed by code anyone can re-run.

This package never imports streamlit: the CLI, the tests and the dashboard all use it the same way.
"""
