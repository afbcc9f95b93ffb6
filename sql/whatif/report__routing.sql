-- The report's routing comparison over the UTC days [$start, $end): per card count and policy, the
-- token hit rate of all days together, prefill tokens, the worst day's busiest-card shares and copies.
select
    cards,
    policy,
    sum(requests)::bigint as requests,
    1 - sum(prefill_tokens) / nullif(sum(prompt_tokens), 0) as token_hit_rate,
    sum(prefill_tokens)::bigint as prefill_tokens,
    max(busiest_card_request_share) as busiest_card_request_share,
    max(busiest_card_prefill_share) as busiest_card_prefill_share,
    max(resident_copies_max) as resident_copies_max
from marts.whatif_routing
where day >= $start and day < $end
group by cards, policy
order by cards, policy;
