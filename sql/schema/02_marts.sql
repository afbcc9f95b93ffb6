-- Daily aggregates and alerts that people and dashboards read.
create schema if not exists marts;
