-- The daily alerts that make up rule incidents (every rule but hit_rate_drop, which the series
-- lifecycle replaces), grouped by rule and scope, in day order.
select day, rule, severity, provider, model, tenant, app, prefix_family, observed, baseline, lost_savings_usd,
       message, cause, divergence_offset_chars, divergence_offset_tokens
from marts.cache_alerts
where rule <> 'hit_rate_drop'
order by rule, provider nulls first, model nulls first, tenant nulls first, app nulls first, prefix_family nulls first, day;
