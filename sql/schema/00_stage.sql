-- Landing area: per-file staging written by the ingest asset before daily partitions are built.
create schema if not exists stage;
