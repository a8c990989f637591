# perfledger team server: the dashboard on the embedded DuckDB store (a file in the /var/lib/perfledger volume),
# or on PostgreSQL when PERFLEDGER_DB_URL says so. The install and start commands are the README's, verbatim
# (tests/team/test_dockerfile.py keeps them in step); see README "Team server".
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

RUN useradd --create-home --uid 10001 --user-group perfledger \
    && mkdir -p /var/lib/perfledger \
    && chown perfledger:perfledger /var/lib/perfledger

WORKDIR /app
COPY requirements.txt ./
RUN python3 -m venv .venv && .venv/bin/pip install -q -r requirements.txt
COPY . .
# Byte-compiled once here: with PYTHONDONTWRITEBYTECODE, every `python -m ingest` would compile the sources again.
RUN .venv/bin/python -m compileall -q app.py dashboard.py screens ingest perfledger
# The compiled scanners (Megatron, MLPerf, torchtitan, TensorBoard) need a C compiler once, here; it is removed in
# the same layer, so the image stays slim. Without them the server reads those logs on the pure-Python/Polars paths
# (Megatron: 1.4x the time on a 100 MB log, 2.2x on 1 GB; bench/README.md). `python -m ingest.native` fails the
# build if one cannot be had.
ENV PERFLEDGER_CACHE_DIR=/app/.native
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && .venv/bin/python -m ingest.native \
    && apt-get purge -y --auto-remove gcc libc6-dev && rm -rf /var/lib/apt/lists/*

ENV PERFLEDGER_DB_URL=duckdb:////var/lib/perfledger/perfledger.duckdb
VOLUME ["/var/lib/perfledger"]
USER perfledger
EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
    CMD ["/app/.venv/bin/python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]

CMD ["sh", "-c", ".venv/bin/python -m perfledger init && exec .venv/bin/streamlit run app.py --server.address 0.0.0.0 --server.headless true --client.showErrorDetails none --browser.gatherUsageStats false"]
