"""Dagster definitions, one folder per domain (ingest, pricing, usage, costs, marts, alerts, publish, nightly)."""
