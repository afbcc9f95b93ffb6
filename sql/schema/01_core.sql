-- Curated, partitioned tables: usage, prices, costs, quarantine.
create schema if not exists core;
