-- FOCUS 1.2 charges of the UTC days [$start, $end): one row per (charge period day, provider, model,
-- tenant, app, token class) and list unit price (a class priced at two rates on one day, e.g. a
-- long-context tier or batch, is two rows, so ListUnitPrice x PricingQuantity = ListCost holds on each).
-- Column sources: docs/focus.md. Only priced rows take part (an unpriced row has no cost; it is in the
-- unpriced_usage alert), so BilledCost sums per day equal marts.daily_savings.cost_usd exactly.
--
-- BilledCost per class: a row billed at its list cost gives each class its list cost. A row whose bill
-- (core.usage_costs.cost_usd) differs is one amount split over its token classes in proportion to their
-- list cost (tokens when the list cost is 0), each share rounded to 1e-15 USD (a ratio, so computed in
-- double precision) and the class with the largest share taking the remainder: a row's classes add up
-- to its bill exactly. Money is DECIMAL(38, 15) USD; PricingQuantity is millions of tokens.
with
priced as (
    select
        u.request_id, u.day, u.provider, u.model, u.tenant, u.app, u.request_count,
        c.price_model, c.price_variant, c.tier_start_tokens, c.cost_basis, c.cost_usd, c.list_cost_usd,
        [
            {'token_class': 'uncached_input', 'ord': 1, 'tokens': u.uncached_input_tokens, 'per_mtok': c.input_per_mtok},
            {'token_class': 'cache_read', 'ord': 2, 'tokens': u.cache_read_tokens, 'per_mtok': c.cache_read_per_mtok},
            {'token_class': 'cache_write_5m', 'ord': 3, 'tokens': u.cache_write_5m_tokens, 'per_mtok': c.cache_write_5m_per_mtok},
            {'token_class': 'cache_write_1h', 'ord': 4, 'tokens': u.cache_write_1h_tokens, 'per_mtok': c.cache_write_1h_per_mtok},
            {'token_class': 'output', 'ord': 5, 'tokens': u.output_tokens, 'per_mtok': c.output_per_mtok}
        ] as classes
    from core.usage u
    join core.usage_costs c using (request_id, day)
    where u.day >= $start and u.day < $end and c.priced
),
classes as (
    select p.* exclude (classes), unnest(p.classes, recursive := true)
    from priced p
),
weighted as (
    select
        *,
        usd(tokens, coalesce(per_mtok, 0)) as list_cost,
        case when list_cost_usd > 0 then usd(tokens, coalesce(per_mtok, 0)) else tokens::decimal(38, 15) end as weight
    from classes
),
shares as (
    select
        *,
        sum(weight) over row_classes as row_weight,
        row_number() over (partition by request_id, day order by weight desc, ord) = 1 as takes_remainder
    from weighted
    window row_classes as (partition by request_id, day)
),
rounded as (
    select
        *,
        case when cost_usd = list_cost_usd then list_cost  -- billed at list (or no bill): each class its list cost
             when takes_remainder then null
             when row_weight = 0 then 0::decimal(38, 15)
             else round(cost_usd::double * (weight::double / row_weight::double), 15)::decimal(38, 15) end as share
    from shares
),
billed as (
    select
        * exclude (share),
        case when takes_remainder and share is null then cost_usd - coalesce(sum(share) over (partition by request_id, day), 0)
             else share end as billed_cost
    from rounded
),
providers (provider, provider_name, service_name, invoice_issuer_name) as (
    values ('openai', 'OpenAI', 'OpenAI API', 'OpenAI'),
           ('azure', 'Microsoft', 'Azure OpenAI', 'Microsoft'),
           ('anthropic', 'Anthropic', 'Claude API', 'Anthropic'),
           ('gemini', 'Google', 'Gemini API', 'Google'),
           ('bedrock', 'AWS', 'Amazon Bedrock', 'AWS'),
           ('deepseek', 'DeepSeek', 'DeepSeek API', 'DeepSeek'),
           ('xai', 'xAI', 'xAI API', 'xAI'),
           ('mistral', 'Mistral AI', 'Mistral API', 'Mistral AI'),
           ('cohere', 'Cohere', 'Cohere API', 'Cohere'),
           ('openrouter', 'OpenRouter', 'OpenRouter', 'OpenRouter'),
           ('self_hosted', 'Self-hosted', 'Self-hosted inference', 'Self-hosted')
),
grouped as (
    select
        b.day, b.provider, b.model, b.tenant, b.app, b.token_class, b.ord, b.price_model, b.price_variant,
        b.tier_start_tokens, b.per_mtok,
        sum(b.billed_cost)::decimal(38, 15) as billed_cost,
        sum(b.list_cost)::decimal(38, 15) as list_cost,
        sum(b.tokens)::bigint as tokens,
        sum(b.request_count) filter (where b.tokens > 0)::bigint as requests,
        case when bool_and(b.cost_basis = 'billed') then 'billed' when bool_and(b.cost_basis = 'list') then 'list'
             else 'mixed' end as cost_basis
    from billed b
    where b.tokens > 0 or b.billed_cost <> 0
    group by all
),
final as (
    select
        g.billed_cost as BilledCost,
        g.provider as BillingAccountId,
        null::varchar as BillingAccountName,
        'USD' as BillingCurrency,
        date_trunc('month', g.day)::timestamptz + interval 1 month as BillingPeriodEnd,
        date_trunc('month', g.day)::timestamptz as BillingPeriodStart,
        'Usage' as ChargeCategory,
        null::varchar as ChargeClass,
        format('{} {} tokens ({})', coalesce(g.model, g.price_model), replace(g.token_class, '_', ' '), g.price_variant)
            as ChargeDescription,
        'Usage-Based' as ChargeFrequency,
        (g.day + 1)::timestamptz as ChargePeriodEnd,
        g.day::timestamptz as ChargePeriodStart,
        g.tokens::decimal(38, 0) as ConsumedQuantity,
        'Tokens' as ConsumedUnit,
        g.billed_cost as ContractedCost,
        g.billed_cost as EffectiveCost,
        coalesce(p.invoice_issuer_name, g.provider) as InvoiceIssuerName,
        g.list_cost as ListCost,
        g.per_mtok as ListUnitPrice,
        'Standard' as PricingCategory,
        (g.tokens::decimal(38, 0) * 0.000001)::decimal(38, 6) as PricingQuantity,
        '1000000 Tokens' as PricingUnit,
        coalesce(p.provider_name, g.provider) as ProviderName,
        -- a gateway's model id names its publisher ('anthropic/claude-sonnet-4.5'); Azure serves OpenAI's
        case when g.provider = 'openrouter' and contains(g.price_model, '/') then split_part(g.price_model, '/', 1)
             when g.provider = 'azure' then 'OpenAI'
             else coalesce(p.provider_name, g.provider) end as PublisherName,
        'AI and Machine Learning' as ServiceCategory,
        coalesce(p.service_name, g.provider) as ServiceName,
        'Generative AI' as ServiceSubcategory,
        concat_ws('/', g.provider, g.price_model, g.token_class) as SkuId,
        concat_ws('/', g.provider, g.price_model, g.token_class, g.price_variant, 'tier' || g.tier_start_tokens) as SkuPriceId,
        to_json({'tenant': g.tenant, 'app': g.app})::varchar as Tags,
        g.app as x_App,
        case when g.token_class = 'cache_read' then 'read' when g.token_class like 'cache_write%' then 'write'
             else 'none' end as x_CacheClass,
        case g.token_class when 'cache_write_5m' then '5m' when 'cache_write_1h' then '1h' end as x_CacheWriteTtl,
        g.cost_basis as x_CostBasis,
        g.model as x_Model,
        g.price_model as x_PriceModel,
        g.price_variant as x_PriceVariant,
        g.requests as x_Requests,
        g.tenant as x_Tenant,
        g.token_class as x_TokenClass
    from grouped g
    left join providers p using (provider)
    order by g.day, g.provider, g.model, g.tenant, g.app, g.ord, g.per_mtok
)
select * from final
