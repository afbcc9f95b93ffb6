"""cachemeter: cost metering and billing analytics for LLM prompt caching (Dagster code location)."""
