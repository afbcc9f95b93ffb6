"""The ingest domain: finding log files, reading them, telling their generations apart, the usage-format
declaration and the readers generated from it, and staging records into ``core.usage`` / ``core.quarantine``.

Orchestration (the Dagster assets and sensors that call this) is ``pipelines/defs/ingest/``.
"""
