-- marts.cost_reconciliation.ratio_basis: how the ratios were found: 'prompt_and_output' (the rows' prompt/output mixes differ enough to solve both), 'one_ratio' (they do not: reported / computed cost for every class).
alter table marts.cost_reconciliation add column if not exists ratio_basis varchar;
