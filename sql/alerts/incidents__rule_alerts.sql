-- The daily alerts that make up rule incidents (every rule but hit_rate_drop, which the series
-- lifecycle replaces), grouped by rule and scope, in day order. Alerts of one scope and day (several data_quality
-- alerts, say) are ordered completely, critical last, so the incident takes the same one as its latest on every build.
select day, rule, severity, provider, model, tenant, app, prefix_family, observed, baseline, lost_savings_usd,
       message, cause, divergence_offset_chars, divergence_offset_tokens
from marts.cache_alerts
where rule <> 'hit_rate_drop'
order by rule, provider nulls first, model nulls first, tenant nulls first, app nulls first, prefix_family nulls first,
         day, severity = 'critical', observed nulls first, message, alert_id;
