-- rotating_preamble: a (provider, model, tenant, app) series whose shared opening started changing
-- on a day of [$start, $end), so cache reuse collapsed (ARCHITECTURE section 5). Signals, per day,
-- against the trailing $alert_baseline_days days:
--   openings_jump  (bodies logged) distinct leading blocks (first 2,048 rendered characters, or the
--                  longest boundary reached) jump to >= 10 and >= half the requests, where the
--                  baseline never had more than 3 on a day;
--   offset_moved   (bodies logged) the median point where consecutive requests diverge moved below
--                  0.8 x its baseline median, i.e. inside what used to be the shared opening;
--   pinned_reads   (no bodies needed) >= 80% of the day's cache hits read exactly the same number of
--                  tokens while prompts vary (>= 5 distinct sizes), where the baseline was not pinned;
--   reads_shrank   (no bodies needed) the same, where the baseline was pinned too but at a larger size:
--                  the day's common read size is below 0.8 x the baseline's (median of its days), so
--                  the opening now changes near that many tokens (divergence_offset_tokens);
-- and, always, a step drop of the token hit rate of at least $alert_min_drop below the baseline.
-- It fires on the first day of an incident only: the series' previous traffic day within the
-- $alert_baseline_days + 1 days before did not meet the condition (a day further back does not continue an
-- incident). So a day's alert reads at most 2 x $alert_baseline_days + 1 days back, whatever window a run
-- rebuilds; alert_id hashes rule, scope and that day, so re-runs never duplicate it.
-- lost_savings_usd = (baseline - observed) x prompt tokens x (input price - cache read price).
insert into marts.cache_alerts by name
with
series_days as (
    -- per-day aggregates (marts.series_days, written just before the rules run): the window, its
    -- previous traffic days (up to $alert_baseline_days + 1 back) and their baselines ($alert_baseline_days more)
    select *
    from marts.series_days
    where day >= $start::date - to_days(2 * $alert_baseline_days + 1) and day < $end
),
signals as (
    select
        s.*,
        s.top_read_count / nullif(s.hits, 0) as read_mode_share,
        s.cache_read_tokens / nullif(s.prompt_tokens, 0) as observed
    from series_days s
),
with_baseline as (
    select
        g.*,
        sum(g.cache_read_tokens) over trailing_days / nullif(sum(g.prompt_tokens) over trailing_days, 0) as baseline,
        sum(g.requests) over trailing_days as baseline_requests,
        max(g.distinct_openings) over trailing_days as baseline_openings,
        median(g.median_offset) over trailing_days as baseline_offset,
        max(g.read_mode_share) over trailing_days as baseline_read_mode_share,
        median(g.top_read_tokens) over trailing_days as baseline_top_read_tokens
    from signals g
    window trailing_days as (
        partition by g.provider, g.model, g.tenant, g.app
        order by g.day
        range between to_days($alert_baseline_days) preceding and interval 1 day preceding
    )
),
conditions as (
    select
        b.*,
        b.body_rows >= 10 and coalesce(b.baseline_openings, 0) <= 3
            and b.distinct_openings >= greatest(10, b.body_rows / 2) as openings_jump,
        b.median_offset is not null and b.baseline_offset is not null and b.median_offset < 0.8 * b.baseline_offset as offset_moved,
        b.hits >= 20 and b.read_mode_share >= 0.8 and b.distinct_hit_prompts >= 5
            and coalesce(b.baseline_read_mode_share, 0) < 0.8 as pinned_reads,
        b.hits >= 20 and b.read_mode_share >= 0.8 and b.distinct_hit_prompts >= 5
            and b.baseline_read_mode_share >= 0.8 and b.top_read_tokens < 0.8 * b.baseline_top_read_tokens as reads_shrank,
        b.requests >= $alert_min_requests and b.baseline_requests >= $alert_min_requests
            and b.baseline - b.observed >= $alert_min_drop as dropped
    from with_baseline b
),
flagged as (
    select c.*, c.dropped and (c.openings_jump or c.offset_moved or c.pinned_reads or c.reads_shrank) as rotating
    from conditions c
),
incidents as (
    select
        f.*,
        lag(struct_pack(day := f.day, rotating := f.rotating))
            over (partition by f.provider, f.model, f.tenant, f.app order by f.day) as previous
    from flagged f
),
described as (
    select
        i.*,
        case
           when (offset_moved or openings_jump) and median_offset is not null
               then format('the shared opening now breaks at char {:,} (~{:,} tokens), on {}',
                           median_offset::bigint, (median_offset / 4)::bigint, coalesce(common_span, 'a changing value'))
           when openings_jump then format('{} distinct openings in {} requests (baseline at most {})',
                                          distinct_openings, body_rows, coalesce(baseline_openings, 0))
            when reads_shrank then format('cache reads now stop at {:,} tokens in {:.0f}% of hits (before: {:,}): '
                                          'the opening changes just after ~{:,} tokens (~{:,} chars)',
                                          top_read_tokens, read_mode_share * 100, baseline_top_read_tokens::bigint,
                                          top_read_tokens, top_read_tokens * 4)
           else format('cache reads pinned at one size in {:.0f}% of hits while prompts vary: the opening changes after that point',
                       read_mode_share * 100)
       end as cause_text
    from incidents i
),
final as (
    select
        md5(concat_ws('|', 'rotating_preamble', provider, coalesce(model, ''), tenant, app, '', day::varchar)) as alert_id,
        day,
        'rotating_preamble' as rule,
        'critical' as severity,
        provider,
        model,
        tenant,
        app,
        null::varchar as prefix_family,
        observed,
        baseline,
        cast((baseline - observed)::decimal(18, 9) * read_discount_usd as decimal(38, 15)) as lost_savings_usd,
        case when offset_moved or openings_jump then median_offset::bigint end as divergence_offset_chars,
        case when offset_moved or openings_jump then (median_offset / 4)::bigint
             when reads_shrank then top_read_tokens end as divergence_offset_tokens,
        case when offset_moved or openings_jump then common_span end as divergence_span,
        day as first_day,
        'rotating preamble: ' || cause_text as cause,
        format('{}/{} ({} {}): rotating preamble since {}: {}; token hit rate {:.1f}% vs {:.1f}%, about ${:.2f} lost that day',
               tenant, app, provider, coalesce(model, '?'), day, cause_text,
               observed * 100, baseline * 100,
               coalesce(((baseline - observed)::decimal(18, 9) * read_discount_usd)::double, 0)) as message
    from described
    where day >= $start and day < $end
      and rotating
      and not coalesce(previous.rotating and previous.day >= day - to_days($alert_baseline_days + 1), false)
)
select * from final;
