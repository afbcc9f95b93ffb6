-- marts.whatif_routing: the routing what-if on each UTC day's usage (grain: day, policy, cards).
-- The day's core.usage rows are replayed in arrival order over `cards` cards, each with its own
-- infinite prefix cache that starts cold every day, under each policy (round_robin, prefix_hash,
-- prefix_hash_split_hot; pipelines/lib/whatif/routing.py; computed column-wise by routing_columns.py, equal
-- to the request-by-request replay). A request's cacheable span is the tokens its log says were read or
-- written, one block per prefix family (routing_inputs.py). Shares 0..1.
create table if not exists marts.whatif_routing (
    day                         date,    -- UTC day replayed
    policy                      varchar, -- round_robin, prefix_hash or prefix_hash_split_hot
    cards                       integer, -- cards (replicas) the day's requests were spread over
    requests                    bigint,  -- usage rows replayed (a usage bucket counts as one)
    prompt_tokens               bigint,  -- tokens of all prompts replayed
    token_hit_rate              double,  -- cache read tokens / prompt tokens under the policy (0..1)
    prefill_tokens              bigint,  -- tokens: prompt tokens not read from any card's cache
    busiest_card_request_share  double,  -- largest share of the day's requests one card received (0..1)
    busiest_card_prefill_share  double,  -- largest share of the day's prefill tokens one card computed (0..1)
    resident_copies_max         integer, -- most cards holding one family's preamble at once
    evicted_tokens              bigint   -- tokens evicted (0: the mart's caches are infinite)
);
