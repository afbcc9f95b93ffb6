-- stage.definitions_version: fingerprint (sha256, hex) of the sql/macros and sql/schema files this
-- warehouse was last prepared with (grain: one row). warehouse.prepare skips re-running them when it
-- matches, so opening a current warehouse costs no DDL; any edited file re-runs them all.
create table if not exists stage.definitions_version (
    sha varchar  -- sha256 of every macro and schema file's text, in file-name order
);
