"""Pure functions with no Dagster in them: log discovery, normalisation, price book, cache models."""
