"""Generate the usage readers' SQL and the adapter table of docs/formats.md from ``formats.yaml``.

``python -m pipelines.ingest.format_sql`` (or ``make formats``) writes every generated file; ``--check``
lists the files that differ from what the declaration generates and exits 1 (``tests/lib/test_format_sql.py``
fails the same way). Generated SQL is committed, so it stays readable and reviewable:

* ``sql/ingest/fields/<format>.sql`` (whole files) and ``sql/ingest/fielded_items__create.sql``: stage 2
  of the general normaliser, one statement per format over only its own items (so no cast ever sees
  another format's values), reading the format's declared paths by name (``json_transform`` into a
  struct; an explicit JSON null reads as absent) and adding its convention and non-default options as
  columns, which the shared stages read;
* regions between ``-- <generated NAME>`` and ``-- </generated>`` in hand-written files: the probe
  struct and shape ladder of ``shaped_items__create.sql`` (stage 1), the token checks of
  ``validated_items__create.sql`` (stage 3), and of the fast lane ``fast_items__read_jsonl.sql`` its
  ``read_json`` schema (only the paths the ladder and the fast-lane formats read), ladder, field picks
  and format options; stage 4 (``file_rows__insert_normalised.sql``) names no format at all;
* the table between the ``formats-table`` markers of ``docs/formats.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from pathlib import Path

from pipelines.ingest import formats as declared
from pipelines.ingest.formats import Declaration, Format

REPO = Path(__file__).resolve().parents[2]
HEADER = ("-- GENERATED from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql`: do not edit;\n"
          "-- edit the declaration and regenerate.\n")
# hand-written SQL files with regions the generator fills in place (-- <generated NAME> ... -- </generated>)
FILLED = ("sql/ingest/shaped_items__create.sql", "sql/ingest/validated_items__create.sql", "sql/ingest/fast_items__read_jsonl.sql",
          "sql/ingest/staged_items__supersede_snapshots.sql", "sql/ingest/duplicate_copies__create.sql")
EXTRA_PROBES = (("_stream",),)  # a folded stream's marker (pipelines/ingest/containers.py), read beside the ladder
# the fields the fast lane reads itself (any other field of a fast-lane format defers the line when present)
# "total" is read and checked plain only: the lane's arithmetic does not use it (a format that checks its total,
# total_is_sum, stays out of the lane), and rows whose total holds thinking (thinking_only_in_total) are deferred
LANE_COUNTS = ("prompt", "extra_prompt", "uncached", "read", "write", "write_5m", "write_1h", "output", "output_extra",
               "reasoning", "total")
LANE_TEXTS = ("model", "id", "iso", "tier", "geo", "speed")
LANE_JSON = ("epoch",)
LANE_MS = ("latency_ms",)  # whole milliseconds, read and checked as a count (any other latency field defers)
_SIMPLE = re.compile(r"^[a-z_][a-z0-9_]*$", re.IGNORECASE)
_RESERVED = {"input", "type", "order", "group", "default", "end", "from", "select", "where", "table", "result"}
DOCS_START = "<!-- formats-table: generated from pipelines/ingest/formats.yaml by `python -m pipelines.ingest.format_sql` -->"
DOCS_END = "<!-- /formats-table -->"


# ---- paths as struct types and references ---------------------------------------------------------

def trie(paths, struct_wins: bool = False) -> dict:
    """Nested dict of keys in first-seen order (None = a JSON leaf). A path that is also a prefix of
    another is a leaf (its children are read from it with ``->``), or a struct when ``struct_wins``."""
    root: dict = {}
    for path in dict.fromkeys(paths):
        node = root
        for depth, key in enumerate(path):
            last = depth == len(path) - 1
            if last:
                if key not in node or (node[key] is not None and not struct_wins):
                    node[key] = None
                break
            if key in node and node[key] is None:
                if not struct_wins:
                    break
                node[key] = {}
            node = node.setdefault(key, {})
    return root


def ident(key: str) -> str:
    return key if _SIMPLE.match(key) and key.lower() not in _RESERVED else '"' + key.replace('"', '""') + '"'


def transform_type(node: dict) -> str:
    """json_transform structure (JSON text) of a trie, as a SQL string body (quotes doubled)."""
    def build(n):
        return {k: ("JSON" if v is None else build(v)) for k, v in n.items()}
    return json.dumps(build(node), separators=(",", ":")).replace("'", "''")


def struct_type(node: dict, indent: str = "", width: int = 104) -> str:
    """DuckDB STRUCT type of a trie, for read_json's columns (members wrapped at ``width``)."""
    parts = [f"{ident(k)} JSON" if v is None else f"{ident(k)} {struct_type(v, indent + '    ', width)}" for k, v in node.items()]
    lines, current = [], ""
    for part in parts:
        if "\n" in part or (current and len(indent) + 4 + len(current) + len(part) + 2 > width):
            if current:
                lines.append(current)
            current = ""
        current = f"{current}, {part}" if current else part
        if "\n" in part:
            lines.append(current)
            current = ""
    if current:
        lines.append(current)
    return "STRUCT(\n" + ",\n".join(indent + "    " + line for line in lines) + ")"


def ref(alias: str, node: dict, path: tuple[str, ...]) -> str:
    """Expression for ``path`` under the struct ``alias`` built from ``node``: a member access, or
    ``json_present(<leaf> -> '$.rest')`` when the path runs on inside a JSON leaf."""
    expr = alias
    for depth, key in enumerate(path):
        if node is None:
            return f"json_present({expr} -> '{declared.json_path(path[depth:])}')"
        if key not in node:
            raise KeyError(path)
        expr += "." + ident(key)
        node = node[key]
    return expr


class LaneSchema(dict):
    """The fast lane's schema of the body (a ``trie``) and its usage roots (``roots``: first keys of the body that
    ``src`` types as columns of their own, ``t_<root>``, from the usage object read as JSON)."""

    roots: frozenset[str] = frozenset()


def body_ref(schema: dict, path: tuple[str, ...]) -> str:
    """``ref`` of a body path in the fast lane: under a typed usage column (``s.t_<root>``) for a usage root of a
    ``LaneSchema``, else under the body struct ``s.response``."""
    if path and path[0] in getattr(schema, "roots", ()):
        return ref(f"s.t_{path[0]}", schema[path[0]], path[1:])
    return ref("s.response", schema, path)


def sql_list(values) -> str:
    return ", ".join(f"'{v}'" for v in values)


# ---- the shape ladder -----------------------------------------------------------------------------

def general_condition(when: dict, probes: dict) -> str:
    (op, arg), = when.items()
    if op in ("all", "any"):
        joined = f" {'and' if op == 'all' else 'or'} ".join(general_condition(part, probes) for part in arg)
        return f"({joined})"
    if op == "provider_in":
        return f"coalesce(p.env_provider, lower($provider)) in ({sql_list(arg)})"
    if op == "batch":
        return f"p.batch_format = '{arg}'"
    if op == "equals":  # parenthesised: DuckDB 1.5 binds `a or b ->> '$' = c` as `(a or b) ->> ...`
        return f"({ref('k', probes, declared.split_path(arg[0]))} ->> '$') = '{arg[1]}'"
    target = ref("k", probes, declared.split_path(arg))
    return {"present": f"{target} is not null", "absent": f"{target} is null",
            "object": f"json_type({target}) = 'OBJECT'", "array": f"json_type({target}) = 'ARRAY'"}[op]


def general_ladder(decl: Declaration, probes: dict) -> str:
    lines = []
    for rule in decl.detection:
        outcome = "null" if rule.format is None else f"'{rule.format}'"
        cond = general_condition(rule.when, probes)
        lines.append(f"            when {cond[1:-1] if cond.startswith('(') else cond} then {outcome}")
    return "\n".join(lines)


def lane_condition(when: dict, schema: dict, exact: bool = True) -> str:
    """The condition over the lane's typed struct (a struct member's presence stands for an object); not
    ``exact``: the presence of each path's first key in the schema, which can only widen the condition."""
    (op, arg), = when.items()
    if op in ("all", "any"):
        return "(" + f" {'and' if op == 'all' else 'or'} ".join(lane_condition(part, schema, exact) for part in arg) + ")"
    if op == "provider_in":
        return f"coalesce(lower(plain_json_text(s.provider)), lower($provider)) in ({sql_list(arg)})"
    if op == "batch":
        return "false"  # batch lines never take the lane
    path = declared.split_path(arg[0] if op == "equals" else arg)
    if not exact and op != "equals":  # presence only (cheaper than json_type, and only wider)
        if op == "absent":
            raise ValueError("an absent key can only end the ladder (format: null)")
        return f"{body_ref(schema, _in_schema(schema, path))} is not null"
    target = body_ref(schema, path)
    leaf = _is_leaf(schema, path)
    if op == "present":
        return f"{target} is not null"
    if op == "absent":
        return f"{target} is null"
    if op == "equals":
        return f"{target} = '\"{arg[1]}\"'"
    kind = "OBJECT" if op == "object" else "ARRAY"
    return f"json_type({target}) = '{kind}'" if leaf else f"{target} is not null"


def _in_schema(schema: dict, path: tuple[str, ...]) -> tuple[str, ...]:
    """The longest prefix of ``path`` the schema holds (up to its first leaf)."""
    node, kept = schema, []
    for key in path:
        if node is None or key not in node:
            break
        kept.append(key)
        node = node[key]
    return tuple(kept)


def _is_leaf(schema: dict, path) -> bool:
    node = schema
    for key in path:
        if node is None:
            return True
        node = node[key]
    return node is None


def lane_ladder(decl: Declaration, schema: dict) -> str:
    """The general ladder over the typed struct: a rung of a fast-lane format names it, any other rung
    defers the line (null; consecutive ones in one branch). A struct member's presence stands for "is
    an object", which can only widen a rung: a line that reaches the wrong format lacks its counts and
    is deferred by the final checks."""
    lane = {f.name for f in decl.formats.values() if f.fast_lane}
    rungs: list[tuple[str, str]] = []
    guarded = False
    for rule in decl.detection:
        if not guarded and list(_equals_paths(rule.when)):
            # text compared as raw JSON: an escaped spelling would compare unequal where the general one is equal
            texts = list(dict.fromkeys(p for r in decl.detection for p in _equals_paths(r.when)))
            joined = " || ".join(f"coalesce({body_ref(schema, p)}::varchar, '')" for p in texts)
            rungs.append((f"contains({joined}, '\\')", "null"))
            guarded = True
        cond = lane_condition(rule.when, schema, exact=rule.format in lane or rule.format is None)
        if cond != "false":
            rungs.append((cond, f"'{rule.format}'" if rule.format in lane else "null"))
    lines: list[str] = []
    pending: list[str] = []
    for index, (cond, outcome) in enumerate(rungs + [("", "")]):
        if outcome == "null":
            pending.append(cond)
            continue
        if pending:
            lines.append("            when " + "\n                 or ".join(pending) + " then null")
            pending = []
        if outcome:
            lines.append(f"            when {cond[1:-1] if cond.startswith('(') and cond.endswith(')') else cond} then {outcome}")
    return "\n".join(lines)


def _equals_paths(when: dict):
    (op, arg), = when.items()
    if op in ("all", "any"):
        for part in arg:
            yield from _equals_paths(part)
    elif op == "equals":
        yield declared.split_path(arg[0])


# ---- stage 2: one reader per format ----------------------------------------------------------------

OPTION_COLUMNS = {  # option -> (column, SQL type)
    "reasoning_beside_output": ("reasoning_beside_output", "varchar[]"),
    "thinking_only_in_total": ("thinking_only_in_total", "varchar[]"),
    "output_optional": ("output_optional", "boolean"),
    "reasoning_may_exceed_output": ("reasoning_may_exceed_output", "boolean"),
    "total_is_sum": ("total_is_sum", "boolean"),
    "request_count": ("request_count_from", "varchar"),
    "id_from_content": ("id_from_content", "boolean"),
    "tier_prompt": ("tier_prompt_from", "varchar"),
    "provider_from_package": ("provider_from_package", "boolean"),
    "provider_from_model_prefix": ("provider_from_model_prefix", "boolean"),
    "zero_write_beside_split": ("zero_write_beside_split", "boolean"),
    "unpriced_modalities": ("unpriced_modalities", "varchar[]"),
}
FORMAT_COLUMNS = (("convention", "varchar"), ("inferred_provider", "varchar"), ("default_provider", "varchar"),
                  ("body_names_upstream", "boolean"), ("reports_write_split", "boolean"), ("usage_roots", "varchar[]"),
                  ("usage_prefix", "varchar"), ("usage_known", "varchar[]"), ("usage_objects", "json[]"))
FIELD_TYPES = {"count": "json", "json": "json", "raw": "json", "text": "varchar", "lower": "varchar", "flag": "boolean",
               "truthy": "boolean"}


def literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + sql_list(value) + "]::varchar[]"
    return "null" if value is None else f"'{value}'"


def field_value(kind: str, alternatives: list[str]) -> str:
    value = alternatives[0] if len(alternatives) == 1 else f"coalesce({', '.join(alternatives)})"
    return {"count": value, "json": value, "text": f"{value} ->> '$'", "lower": f"lower({value} ->> '$')",
            "flag": f"({value} ->> '$') = 'true'", "truthy": f"lower({value} ->> '$') in ('true', '1', 'yes')"}[kind]


def fields_sql(decl: Declaration, fmt: Format) -> str:
    """``insert into fielded_items``: the format's items with their fields, convention and options."""
    read_paths = [p for name, m in fmt.fields.items() if decl.fields[name].kind != "raw" for p in m.paths]
    if fmt.openrouter_when_text:
        read_paths.append(fmt.openrouter_when_text)
    node = trie(read_paths)
    columns = [f"'{fmt.convention}' as convention",
               f"'{fmt.provider}' as inferred_provider",
               f"{literal(fmt.default_provider)} as default_provider",
               ]
    if fmt.default_provider is None:
        columns.pop()
    if fmt.openrouter_when_text:
        columns.append(f"coalesce(json_type({ref('v', node, fmt.openrouter_when_text)}) = 'VARCHAR', false) as body_names_upstream")
    if "write_1h" in fmt.fields:  # a cache write total the format splits by TTL (a missing split is flagged)
        columns.append("true as reports_write_split")
    if fmt.usage is not None:  # the unmapped-key check (stage 4): where the usage counts are, which keys are known
        roots = ["$" if not r else declared.json_path(r) for r in fmt.usage.roots]
        columns.append(f"{literal(roots)} as usage_roots")
        # the usage objects themselves, in the roots' order: the body is not carried past this stage
        columns.append("[" + ", ".join(f"s.b -> '{r}'" for r in roots) + "]::json[] as usage_objects")
        if fmt.usage.prefix:
            columns.append(f"{literal(fmt.usage.prefix)} as usage_prefix")
        columns.append(f"{literal(fmt.known_usage_keys())} as usage_known")
    # options at their default are left null (the shared stages read null as the default)
    columns += [f"{literal(fmt.options[o])} as {col}" for o, (col, _) in OPTION_COLUMNS.items()
                if fmt.options[o] != declared.OPTIONS[o]]
    for name, mapping in fmt.fields.items():
        spec = decl.fields[name]
        if spec.kind == "raw":  # the explicit JSON null is kept (the checks tell it from an absent key)
            value = f"s.b -> '{declared.json_path(mapping.paths[0])}'"
        else:
            value = field_value(spec.kind, [ref("v", node, p) for p in mapping.paths])
        columns.append(f"{value} as {spec.column}")
    body = ",\n".join("    " + c for c in columns)
    # the body text is left behind (stages 3 and 4 read the fields), but where the request id is a hash of it
    keep_body = "v" if fmt.options["id_from_content"] else "v, b"
    return (HEADER +
            f"-- General normaliser, stage 2: the fields of {fmt.name} items ({fmt.title}).\n"
            f"-- One parse of each item for every path the format reads (into named struct fields).\n"
            "insert into fielded_items by name\n"
            "select\n"
            f"    s.* exclude ({keep_body}),\n"
            f"{body}\n"
            f"from (select s.*, json_transform(s.b, '{transform_type(node)}') as v\n"
            f"      from shaped_items s where s.source_format = '{fmt.name}') s;\n")


def _from_body(path: tuple[str, ...], alternatives: tuple[tuple[str, ...], ...] = ()) -> str:
    """The JSON at ``path`` of the body (``s.b0``), or the first present of ``alternatives``."""
    refs = [f"s.b0 -> '{declared.json_path(p)}'" for p in (alternatives or (path,))]
    return refs[0] if len(refs) == 1 else f"coalesce({', '.join(refs)})"


def bodies_sql(decl: Declaration) -> str:
    """shaped_items' ``b`` (the object each format's field paths are read from), ``span`` and ``structure_error``
    columns, from each format's ``body`` declaration (``formats.Body``; none: the body itself)."""
    roots, spans, errors = [], {}, []
    for f in decl.formats.values():
        body = f.body
        if body is None:
            continue
        if body.root:
            roots.append(f"when s.source_format = '{f.name}' then {_from_body((), body.root)}")
        if body.members:
            pairs = [f"'{key}', {_from_body((), paths)}" for key, paths in body.members.items()]
            if body.key_names:
                pairs.append(f"'{body.key_names}', json_keys(s.b0)")
            roots.append(f"when s.source_format = '{f.name}' then json_object(\n        "
                         + ",\n        ".join(pairs) + ")")
        if body.json_text:
            member = declared.json_path((body.json_text,))
            is_text = f"s.source_format = '{f.name}' and json_type(s.b0, '{member}') = 'VARCHAR'"
            roots.append(f"when {is_text} and json_valid(s.b0 ->> '{member}')\n"
                         f"    then json_merge_patch(s.b0, json_object('{body.json_text}', (s.b0 ->> '{member}')::json))")
            errors.append(f"when {is_text} and not json_valid(s.b0 ->> '{member}')\n    then {literal(body.json_text_invalid)}")
        if body.span:
            spans.setdefault(declared.json_path(body.span), []).append(f.name)
        for key in body.objects:
            errors.append(f"when s.source_format = '{f.name}' and json_type(s.b0, '{declared.json_path((key,))}') "
                          f"not in ('OBJECT', 'NULL')\n    then {literal(key + ' is not an object')}")
    lines = ["case"] + ["    " + line for r in roots for line in r.split("\n")] + ["    else s.b0", "end as b,"]
    span = " ".join(f"when s.source_format in ({sql_list(names)}) then s.b0 -> '{path}'" for path, names in spans.items())
    lines.append(f"case {span} end as span," if span else "null::json as span,")
    lines += ["case"] + ["    " + line for e in errors for line in e.split("\n")] + ["end as structure_error"]
    return "\n".join(lines)


def fielded_create_sql(decl: Declaration) -> str:
    columns = [f"null::{t} as {c}" for c, t in FORMAT_COLUMNS]
    columns += [f"null::{t} as {c}" for c, t in OPTION_COLUMNS.values()]
    columns += [f"null::{FIELD_TYPES[f.kind]} as {f.column}" for f in decl.fields.values()]
    body = ",\n".join("    " + c for c in columns)
    return (HEADER +
            "-- General normaliser, stage 2: fielded_items, the shaped items (stage 1) with each field's value and\n"
            "-- their format's convention and options; filled by sql/ingest/fields/<format>.sql, one per format,\n"
            "-- and for items of no format (unrecognised, streams, not JSON) by this statement.\n"
            "create or replace temp table fielded_items as\n"
            "select\n"
            "    s.*,\n"
            f"{body}\n"
            f"from shaped_items s\n"
            f"where s.is_json and (s.source_format is null or s.source_format not in ({sql_list(decl.formats)}));\n")


# ---- stages 3 and 4, and the fast lane -------------------------------------------------------------

def token_checks(decl: Declaration) -> str:
    return "\n".join(f"        token_error(x.{f.column}, '{f.label}')," for f in decl.fields.values() if f.kind == "count")


def probe_paths(decl: Declaration) -> list[tuple[str, ...]]:
    found = [p for rule in decl.detection for p in declared.condition_paths(rule.when)]
    return list(dict.fromkeys(found + list(EXTRA_PROBES)))


def lane_schema(decl: Declaration) -> dict:
    """The fast lane's typed schema of the body: the fast-lane formats' paths and the keys of their rungs
    and of the rungs that leave a record unrecognised, read exactly; of another format's rung only the
    first key the lane does not read otherwise (its presence defers the line)."""
    lane = {f.name for f in decl.formats.values() if f.fast_lane}
    exact = [p for f in decl.formats.values() if f.fast_lane for p in f.paths()]
    exact += [p for r in decl.detection if r.format in lane or r.format is None for p in declared.condition_paths(r.when)]
    # the informational usage keys too (an array of objects as one JSON leaf): the undeclared-key check reads them
    exact += [f.usage.roots[0] + _array_cut(declared.split_path(k)) for f in decl.formats.values()
              if f.fast_lane and f.usage is not None for k in f.usage.informational]
    schema = trie(exact + list(EXTRA_PROBES), struct_wins=True)
    # a field read both as a value and below it (Perplexity's usage.cost object beside OpenRouter's number) stays
    # a JSON leaf, as in the general reader: a number read as a struct would null the whole line
    for f in decl.formats.values():
        if f.fast_lane:
            field_paths = [p for m in f.fields.values() for p in m.paths]
            for path in field_paths:
                if any(len(o) > len(path) and o[:len(path)] == path for o in field_paths):
                    node = schema
                    for key in path[:-1]:
                        node = node[key]
                    node[path[-1]] = None
    for rule in decl.detection:
        if rule.format not in lane and rule.format is not None:
            for path in declared.condition_paths(rule.when):
                node = schema
                for key in path:
                    if node is None:
                        break
                    if key not in node:
                        node[key] = None
                        break
                    node = node[key]
    return schema


def lane_sql_parts(decl: Declaration) -> dict[str, str]:
    lane = [f for f in decl.formats.values() if f.fast_lane]
    odd = [f.name for f in lane if f.convention not in ("inclusive", "additive")]
    if odd:
        raise ValueError(f"the fast lane reads inclusive and additive formats only, not {odd}")
    checked = [f.name for f in lane if f.options["total_is_sum"]]
    if checked:
        raise ValueError(f"the fast lane does not check totals (total_is_sum): {checked}")
    roots = lane_usage_roots(lane)
    schema = LaneSchema(lane_schema(decl))
    schema.roots = frozenset(r_[0] for r_ in roots)

    def case(expr_of, name):
        branches = [(f.name, expr_of(f)) for f in lane]
        branches = [(n, e) for n, e in branches if e is not None]
        if not branches:
            return f"        null::json as {name}"
        if len(branches) == len(lane) and len({e for _, e in branches}) == 1:
            return f"        {branches[0][1]} as {name}"
        grouped: dict[str, list[str]] = {}
        for n, e in branches:  # formats reading a field at the same path share one branch
            grouped.setdefault(e, []).append(n)
        whens = " ".join(f"when s.source_format = '{ns[0]}' then {e}" if len(ns) == 1 else
                         f"when s.source_format in ({sql_list(ns)}) then {e}" for e, ns in grouped.items())
        return f"        case {whens} end as {name}"

    def alternatives(f: Format, field: str):
        mapping = f.fields.get(field)
        if mapping is None:
            return None
        refs = [body_ref(schema, p) for p in mapping.paths]
        return refs[0] if len(refs) == 1 else f"coalesce({', '.join(refs)})"

    lane_fields = LANE_COUNTS + LANE_TEXTS + LANE_JSON + LANE_MS
    picked = [case(lambda f, n=n: alternatives(f, n), f"v_{n}") for n in lane_fields]
    picked.append(case(lambda f: body_ref(schema, f.openrouter_when_text) if f.openrouter_when_text else None,
                       "body_upstream"))
    unsupported = []
    for f in lane:
        other = [f"{body_ref(schema, p)} is not null" for n, m in f.fields.items() if n not in lane_fields
                 for p in m.paths]
        # a documented key no class prices, above zero (or not a count): the general normaliser reports it
        other += [f"{body_ref(schema, p)} <> '0'" for p in f.unpriced_paths()]  # raw JSON text: cheap
        # a per-modality breakdown naming a modality no class prices (or an escaped text): the general walk decides
        other += [f"contains({body_ref(schema, p)}::varchar, '\"{m}\"') or contains({body_ref(schema, p)}::varchar, '\\')"
                  for p in f.modality_breakdowns() for m in f.options["unpriced_modalities"]]
        if other:
            unsupported.append(f"when '{f.name}' then " + " or ".join(other))
    picked.append(f"        coalesce(case s.source_format {' '.join(unsupported)} end, false) as unsupported"
                  if unsupported else "        false as unsupported")
    valued = _rows([f"plain_count(p.v_{n}) as n_{n}," for n in LANE_COUNTS + LANE_MS], 3)
    valued += _rows([f"plain_json_text(p.v_{n}) as t_{n}," for n in LANE_TEXTS], 3)
    checks = _rows([f"and (v.v_{n} is null or v.n_{n} < 1000000000000)" for n in LANE_COUNTS + LANE_MS], 2)
    checks += _rows([f"and (v.v_{n} is null or v.t_{n} is not null)" for n in LANE_TEXTS], 2)
    picked += lane_option_columns(lane)
    picked.append(lane_usage_check(lane, schema))
    read_schema = {k: (None if (k,) in roots else v) for k, v in schema.items()}
    return {
        "response_struct": ("response: '" + struct_type(read_schema) + "'").split("\n"),
        "usage_typed": lane_usage_typed(lane, roots, schema),
        "usage_keys": lane_usage_keys(lane, roots, schema),
        "ladder": lane_ladder(decl, schema).split("\n"),
        "picked": ",\n".join(picked).split("\n"),
        "valued": valued,
        "plain_checks": checks,
        "reasoning_beside": lane_reasoning_beside(lane),
        "thinking_only_in_total": lane_thinking_only_in_total(lane),
    }


def _array_cut(path: tuple[str, ...]) -> tuple[str, ...]:
    """``('a[*]', 'b')`` -> ``('a',)``: a path up to its first array (read as one JSON leaf)."""
    for depth, key in enumerate(path):
        if key.endswith("[*]"):
            return path[:depth] + (key[:-3],)
    return path


def lane_usage_roots(lane: list[Format]) -> list[tuple[str, ...]]:
    """The fast-lane formats' usage roots (each one key of the body): read as JSON, then typed by json_transform."""
    roots = list(dict.fromkeys(f.usage.roots[0] for f in lane if f.usage is not None))
    deep = [r for f in lane if f.usage is not None for r in f.usage.roots if len(r) != 1 or len(f.usage.roots) != 1]
    if deep:
        raise ValueError(f"the fast lane reads one usage object per format, a key of the body: not {deep}")
    return roots


def _usage_column(root: tuple[str, ...]) -> str:
    return "u_" + root[0]


def _key_objects(fmt: Format) -> list[tuple[tuple[str, ...], dict]]:
    """(relative path, declared children) of every object of the format's usage keys (mapped, informational,
    unpriced) outside arrays, the root first; an array's elements are under ``name[*]``."""
    found = []

    def walk(node, path):
        found.append((path, node))
        for key, child in node.items():
            if child is not None and not key.endswith("[*]"):
                walk(child, path + (key,))
    walk(_usage_key_trie(fmt), ())
    return found


def _usage_key_trie(fmt: Format) -> dict:
    """The trie of the format's usage keys (mapped, informational, unpriced), relative to its usage root."""
    keys = fmt.known_usage_keys() + [k for k in fmt.usage.unpriced if k not in fmt.known_usage_keys()]
    return trie([declared.split_path(k) for k in keys], struct_wins=True)


def _key_paths(lane: list[Format], root: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The objects whose keys the lane lists for one usage root: every lane format's with that root, in order."""
    return list(dict.fromkeys(p for f in lane if f.usage is not None and f.usage.roots[0] == root
                              for p, _ in _key_objects(f)))


def lane_usage_typed(lane: list[Format], roots: list[tuple[str, ...]], schema: dict) -> list[str]:
    """src's columns: the body's columns, each usage object as JSON (``u_<root>``) and typed as the lane's struct
    (``t_<root>``, which ``body_ref`` reads its paths from), and ``usage_typed``: false when a usage value is not an
    object (it did not type; the ladder defers the line)."""
    typed = ", ".join(f"json_transform(r.response.{ident(r_[0])}, '{transform_type(schema[r_[0]])}') as t_{r_[0]}"
                      for r_ in roots)
    ok = " and ".join(f"(r.response.{ident(r_[0])} is null or r.t_{r_[0]} is not null)" for r_ in roots)
    columns = ["r.*"] + [f"r.response.{ident(r_[0])} as {_usage_column(r_)}" for r_ in roots]
    return [c + "," for c in columns] + [f"{ok} as usage_typed", f"from (select r.*, {typed} from raw r) r"]


def _expected_length(fmt: Format, schema: dict) -> str:
    """The length in bytes of the format's usage object as DuckDB's reader writes it (minified) when every key in it
    is declared, read from the typed values: per object ``{`` and ``}``, per key present its quoted name, a colon and
    a comma (one fewer comma than keys), and per value the length of its JSON text (a leaf: DuckDB writes a leaf's
    text as it writes the whole object's) or of its object, recursively. An object the format declares no keys of
    counts as ``{}``, an informational leaf holding an object not at all (the lane defers such a leaf)."""
    root = fmt.usage.roots[0]
    informational = {declared.split_path(k) for k in fmt.usage.informational}

    def length(node: dict, path: tuple[str, ...]) -> str:
        terms = []
        for key, child in node.items():
            name = key.removesuffix("[*]")
            here = path + (name,)
            expr, fixed = body_ref(schema, root + here), len(name.encode()) + 4  # "name": and a comma
            if _is_leaf(schema, root + here):
                value = f"strlen({expr}::varchar)"
                if here in informational:
                    value = f"case when not starts_with({expr}::varchar, '{{') then {value} end"
                terms.append(f"coalesce({value} + {fixed}, 0)")
            else:
                inner = length(child, here) if child is not None else "2"
                terms.append(f"case when {expr} is not null then {inner} + {fixed} else 0 end")
        if not terms:
            return "2"
        if not path:
            return f"greatest({' + '.join(terms)} + 1, 2)"
        # a declared object none of whose declared keys is present: {} or a value that is no object (it types as a
        # struct of nulls, as {} does, and may be a 2-character number); -1 makes the text's length differ, so the
        # keys are listed and lane_usage_check decides
        return f"coalesce(nullif({' + '.join(terms)}, 0) + 1, -1)"
    return length(_usage_key_trie(fmt), ())


def lane_usage_keys(lane: list[Format], roots: list[tuple[str, ...]], schema: dict) -> list[str]:
    """keyed's columns: the keys of each usage object's declared objects (``k_<root>``: one json_keys parse, one
    list per object of ``_key_paths``, null where absent), listed only where the object can hold a key its format
    does not declare or a value its format does not read as it is; else null, and ``undeclared_usage`` is false.

    The keys are listed where the usage object's text is not exactly as long as its declared keys present and their
    typed values make it (``_expected_length``: a key the format does not declare, an explicit null, an informational
    leaf holding an object, or a value that does not type make it longer), or where it holds a ``[`` (an array, whose
    elements ``lane_usage_check`` examines). What is left is a usage object whose every key is declared, which
    ``lane_usage_check`` would pass. The lengths are arithmetic on the typed values (DuckDB keeps each text's length),
    much cheaper per row than counting characters in the text (``replace``), json_keys' parse, or a test per leaf.
    """
    columns = []
    for r_ in roots:
        text = f"s.{_usage_column(r_)}::varchar"
        lengths = " ".join(f"when '{f.name}' then {_expected_length(f, schema)}" for f in lane
                           if f.usage is not None and f.usage.roots[0] == r_)
        paths = ", ".join(f"'{declared.json_path(p) if p else '$'}'" for p in _key_paths(lane, r_))
        columns.append(f"case when contains({text}, '[') or strlen({text}) <> case s.source_format {lengths} end\n"
                       f"    then json_keys(s.{_usage_column(r_)}, [{paths}]) end as k_{r_[0]}")
    return ",\n".join(columns).split("\n")


def _typed_present(schema: dict, path: tuple[str, ...], child: dict | None) -> str:
    """SQL: the declared key at ``path`` holds what the lane reads: a leaf (an array, an object read as JSON) that is
    not null; an object with at least one such key. An object holding a scalar types as a struct of nulls, as ``{}``
    does, so both count as absent (the general walk reports a number there that is above zero)."""
    if child is None or _is_leaf(schema, path):
        return f"{body_ref(schema, path)} is not null"
    members = [_typed_present(schema, path + (key.removesuffix("[*]"),), None if key.endswith("[*]") else sub)
               for key, sub in child.items()]
    return "(" + " or ".join(members) + ")"


def lane_usage_check(lane: list[Format], schema: dict) -> str:
    """picked's ``undeclared_usage``, decided only where keyed listed the usage object's keys (elsewhere its text's
    length shows none of these, ``lane_usage_keys``): the format's usage object holds a key it does
    not declare (a declared object, the root first, has more keys than declared ones present), a declared leaf holds
    an object or array, or an array of the declaration has elements that are not objects or hold an undeclared key:
    then the general walk (unmapped_usage__create.sql) decides, so the line defers."""
    whens = []
    for f in lane:
        if f.usage is None:
            continue
        root = f.usage.roots[0]
        column, listed = "s." + _usage_column(root), _key_paths(lane, root)
        informational = {declared.split_path(k) for k in f.usage.informational}
        terms = []
        for p, node in _key_objects(f):
            k = f"s.k_{root[0]}[{listed.index(p) + 1}]"
            if _is_leaf(schema, root + p):  # read as JSON (a value the lane defers when present): name the keys
                terms.append(f"len(list_filter({k}, x -> x not in ({sql_list(node)}))) > 0")
            else:
                # more keys than declared ones present (typed: not null) -- cheaper than comparing the names; a
                # declared key with a JSON null or a declared object holding a scalar counts as absent, so defers too
                present = " + ".join(
                    f"({_typed_present(schema, root + p + (key.removesuffix('[*]'),), None if key.endswith('[*]') else child)})"
                    "::int" for key, child in node.items())
                terms.append(f"coalesce(len({k}) > {present}, false)")
            for key, child in node.items():
                if key.endswith("[*]"):
                    expr = body_ref(schema, root + p + (key[:-3],))
                    items = declared.json_path(p + (key[:-3],)) + "[*]"
                    checks = [f"not starts_with({expr}::varchar, '[')",
                              f"not list_has_all(['OBJECT'], json_type({column}, '{items}'))",
                              f"len(list_filter(flatten(json_keys({column}, '{items}')), x -> x not in ({sql_list(child)}))) > 0"]
                    checks += [f"list_has_any(['OBJECT', 'ARRAY'], json_type({column}, '{items}.{ident(leaf)}'))"
                               for leaf, sub in child.items() if sub is None]
                    terms.append(f"({expr} is not null and ({' or '.join(checks)}))")
                elif child is None and p + (key,) in informational:  # the lane reads the others itself
                    expr = body_ref(schema, root + p + (key,))
                    terms.append(f"coalesce({expr}::varchar like '{{%' or {expr}::varchar like '[%', false)")
        # a CASE, not an AND: a projection evaluates both sides of an AND on every row
        whens.append(f"when '{f.name}' then case when s.k_{root[0]} is not null then {' or '.join(terms)} end")
    return f"        coalesce(case s.source_format {' '.join(whens)} end, false) as undeclared_usage"


def lane_option_columns(lane: list[Format]) -> list[str]:
    """The fast-lane formats' convention and options as the columns the general normaliser names them by
    (a flag as one membership test: cheaper per row than a CASE)."""
    def by_format(values: dict, name: str) -> str:
        grouped: dict[str, list[str]] = {}
        for n, v in values.items():
            if v is not None:
                grouped.setdefault(v, []).append(n)
        whens = " ".join(f"when s.source_format in ({sql_list(ns)}) then {literal(v)}" for v, ns in grouped.items())
        return f"        case {whens} end as {name}" if whens else f"        null::varchar as {name}"

    def flag(option: str, name: str) -> str:
        chosen = [f.name for f in lane if f.options[option]]
        return f"        s.source_format in ({sql_list(chosen)}) as {name}" if chosen else f"        false as {name}"
    return [
        by_format({f.name: f.provider for f in lane if f.provider != "by_model"}, "inferred_provider"),
        by_format({f.name: f.default_provider for f in lane}, "default_provider"),
        f"        s.source_format in ({sql_list(f.name for f in lane if f.convention == 'additive')}) as additive",
        flag("output_optional", "output_optional"),
        flag("reasoning_may_exceed_output", "reasoning_may_exceed_output"),
        f"        s.source_format in ({sql_list(f.name for f in lane if 'write_1h' in f.fields)}) as reports_write_split",
    ]


def lane_reasoning_beside(lane: list[Format]) -> list[str]:
    """Whether a row's reasoning count is reported beside its output count (format and provider)."""
    terms = [f"(c.source_format = '{f.name}' and c.provider in ({sql_list(f.options['reasoning_beside_output'])}))"
             for f in lane if f.options["reasoning_beside_output"]]
    return [" or ".join(terms) or "false"]


def lane_thinking_only_in_total(lane: list[Format]) -> list[str]:
    """Whether a row's provider leaves thinking out of its output count but in its total (format and provider): the
    lane does not read totals, so such rows go to the general normaliser, which adds the gap to the output."""
    terms = [f"(c.source_format = '{f.name}' and c.provider in ({sql_list(f.options['thinking_only_in_total'])}))"
             for f in lane if f.options["thinking_only_in_total"]]
    return [f"and not coalesce({' or '.join(terms) or 'false'}, false)"]


def _rows(items: list[str], per_line: int) -> list[str]:
    return [" ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]


_REGION = re.compile(r"^(?P<indent>[ \t]*)-- <generated (?P<name>\w+)[^\n]*\n(?:(?![ \t]*-- </generated>).*\n)*"
                     r"(?P=indent)-- </generated>\n", re.MULTILINE)


def fill(text: str, parts: dict[str, list[str]], where: str) -> str:
    """``text`` with each ``-- <generated NAME ...>`` ... ``-- </generated>`` region holding ``parts[NAME]``
    (lines, indented as the opening marker). Raises ValueError for a region without a part or a part
    without a region."""
    seen = set()

    def replace(match: re.Match) -> str:
        name, indent = match["name"], match["indent"]
        if name not in parts:
            raise ValueError(f"{where}: nothing generates region {name!r}")
        seen.add(name)
        opening = match.group(0).split("\n", 1)[0]
        body = "".join(indent + line + "\n" for line in textwrap.dedent("\n".join(parts[name])).split("\n"))
        return f"{opening}\n{body}{indent}-- </generated>\n"

    out = _REGION.sub(replace, text)
    if set(parts) - seen:
        raise ValueError(f"{where}: no region for {sorted(set(parts) - seen)}")
    return out


def docs_table(decl: Declaration) -> str:
    rows = ["| Adapter (`source_format`) | Detected by | Input convention | Paths read from | Fast lane | Example |",
            "|---|---|---|---|---|---|"]
    for fmt in decl.formats.values():
        rules = [r for r in decl.detection if r.format == fmt.name]
        shown = "; ".join(describe(r.when) for r in rules)
        rows.append(f"| `{fmt.name}` | {shown} | {fmt.convention} | {describe_body(fmt.body)} | {'yes' if fmt.fast_lane else ''} "
                    f"| `{fmt.example}` |")
    for name, spec in decl.wrappers.items():
        label = f"`{name}`" if name != "streams" else name
        rows.append(f"| {label} | {spec['detected_by']} | {spec['convention']} | | | `{spec['example']}` |")
    return "\n".join(rows)


def describe_body(body) -> str:
    """docs/formats.md's words for a format's ``body`` declaration (``formats.Body``)."""
    if body is None or not (body.root or body.members or body.json_text):
        return "the body"
    if body.root:
        return " or ".join(f"`{declared.json_path(p)[2:]}`" for p in body.root)
    if body.members:
        return "an object of " + ", ".join(f"`{k}`" for k in body.members) + (f", `{body.key_names}` (the body's key names)"
                                                                               if body.key_names else "")
    return f"the body, `{body.json_text}` parsed when it is JSON text"


def describe(when: dict) -> str:
    (op, arg), = when.items()
    if op in ("all", "any"):
        return f" {'and' if op == 'all' else 'or'} ".join(describe(p) for p in arg)
    if op == "equals":
        return f"`{arg[0]}: {arg[1]}`"
    if op == "provider_in":
        return "provider " + " / ".join(f"`{a}`" for a in arg)
    if op == "batch":
        return f"a `{arg}` line"
    return {"present": "`{}`", "absent": "no `{}`", "object": "`{}` object", "array": "`{}` array"}[op].format(arg)


def snapshot_list(decl: Declaration) -> str:
    """The streamed-snapshot formats as a SQL list (``'null'`` when there are none: ``x in (null)`` is never true)."""
    return sql_list(declared.snapshot_formats(decl)) or "null"


def generated(decl: Declaration | None = None) -> dict[Path, str]:
    """Every generated file (path under the repository -> text)."""
    decl = decl or declared.load()
    probes = trie(probe_paths(decl))
    parts = {
        "sql/ingest/shaped_items__create.sql": {
            "probe_type": ["'" + transform_type(probes) + "'"], "ladder": general_ladder(decl, probes).split("\n"),
            "bodies": bodies_sql(decl).split("\n")},
        "sql/ingest/validated_items__create.sql": {"token_checks": token_checks(decl).split("\n")},
        "sql/ingest/fast_items__read_jsonl.sql": lane_sql_parts(decl),
        "sql/ingest/staged_items__supersede_snapshots.sql": {"snapshot_formats": [snapshot_list(decl)]},
        "sql/ingest/duplicate_copies__create.sql": {"snapshot_formats": [snapshot_list(decl)]},
    }
    out = {Path(name): fill((REPO / name).read_text(encoding="utf-8"), parts[name], name) for name in FILLED}
    out[Path("sql/ingest/fielded_items__create.sql")] = fielded_create_sql(decl)
    for fmt in decl.formats.values():
        out[Path(f"sql/ingest/fields/{fmt.name}.sql")] = fields_sql(decl, fmt)
    page = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    start, end = page.index(DOCS_START) + len(DOCS_START), page.index(DOCS_END)
    out[Path("docs/formats.md")] = page[:start] + "\n" + docs_table(decl) + "\n" + page[end:]
    return out


def stale(decl: Declaration | None = None) -> list[Path]:
    """Generated files whose committed text differs from what the declaration generates."""
    return [path for path, text in generated(decl).items()
            if not (REPO / path).is_file() or (REPO / path).read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the usage readers' SQL and docs/formats.md's table.")
    parser.add_argument("--check", action="store_true", help="list stale files and exit 1 instead of writing")
    args = parser.parse_args(argv)
    if args.check:
        found = stale()
        for path in found:
            print(f"stale: {path}")
        return 1 if found else 0
    expected = generated()
    folder = REPO / "sql" / "ingest" / "fields"
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.sql"):
        if old.relative_to(REPO) not in expected:
            old.unlink()
    for path, text in expected.items():
        (REPO / path).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
