"""Generate ``docs/tables.md`` from the column comments in ``sql/schema/*.sql`` (so the docs cannot drift).

Every column of every table must carry a comment (unit, meaning): ``missing_comments()`` lists the
ones that do not, and a test fails on any. Run ``python -m pipelines.lib.table_docs > docs/tables.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipelines.lib.sql import sql_root

_CREATE = re.compile(r"create table if not exists (\w+\.\w+)\s*\(", re.IGNORECASE)
_COLUMN = re.compile(r"^\s+(\w+)\s+([a-z]+(?:\(\s*\d+\s*,\s*\d+\s*\))?(?:\[\])?),?\s*(?:--\s*(.*))?$", re.IGNORECASE)
_VIEW = re.compile(r"create or replace view (\w+\.\w+) as", re.IGNORECASE)
_ALTER = re.compile(r"alter table (\w+\.\w+) add column if not exists (\w+) ([\w\[\](), ]+);", re.IGNORECASE)

EXAMPLES = """## Example queries

```sql
-- What did caching save per app last week? (USD)
select app, sum(savings_usd) as saved_usd, sum(cost_usd) as paid_usd
from marts.daily_savings
where day > (select max(day) from marts.daily_savings) - 7
group by app order by saved_usd desc;

-- Which prefix families' hit rate fell below their own baseline, and what did it cost?
select day, prefix_family, app, token_hit_rate, baseline_hit_rate, lost_savings_usd
from marts.prefix_families
where token_hit_rate < baseline_hit_rate - 0.2
order by lost_savings_usd desc limit 20;

-- Which models have no price? (their cost is unknown, never zero)
select u.provider, u.model, c.unpriced_reason, count(*) as requests
from core.usage u join core.usage_costs c using (request_id)
where not c.priced group by all order by requests desc;

-- What is open, newest first, with its cause?
select day, severity, rule, message from marts.cache_alerts order by day desc;

-- Why were records rejected?
select reason, count(*) from core.quarantine group by 1 order by 2 desc;
```
"""


@dataclass
class Table:
    """A table: name, what it is (the comment above its CREATE), columns (name, type, comment)."""

    name: str
    description: str
    columns: list[tuple[str, str, str | None]] = field(default_factory=list)


def tables() -> list[Table]:
    """Every table defined in ``sql/schema``, with columns added by later ALTER files appended."""
    found: dict[str, Table] = {}
    for path in sorted((sql_root() / "schema").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        create = _CREATE.search(text)
        if create:
            header = " ".join(l.lstrip("- ").strip() for l in lines if l.startswith("--"))
            table = found.setdefault(create.group(1), Table(create.group(1), header))
            body = text[create.end():text.rindex(")")]
            for line in body.splitlines():
                match = _COLUMN.match(line)
                if match:
                    table.columns.append((match.group(1), match.group(2), match.group(3)))
        for alter in _ALTER.finditer(text):
            name, column, kind = alter.groups()
            if name not in found:  # a table created as a copy of another (stage.duplicate_rows) is not documented
                continue
            comment = next((l.split(":", 1)[1].strip() for l in lines if l.startswith(f"-- {name}.{column}:")), None)
            found[name].columns.append((column, kind.strip(), comment))
    return list(found.values())


def views() -> list[tuple[str, str]]:
    """``(name, description)`` of every view in ``sql/schema`` (their columns are documented with the tables they join)."""
    out = []
    for path in sorted((sql_root() / "schema").glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        if match := _VIEW.search(text):
            out.append((match.group(1), " ".join(l.lstrip("- ").strip() for l in text.splitlines() if l.startswith("--"))))
    return out


def missing_comments() -> list[str]:
    """``table.column`` of every column without a comment."""
    return [f"{t.name}.{c}" for t in tables() for c, _, comment in t.columns if not comment]


def render() -> str:
    """The Markdown page."""
    out = ["# Tables", "",
           "Generated from the column comments in `sql/schema/*.sql` by `python -m pipelines.lib.table_docs`; "
           "a test fails when this page and the SQL disagree or a column has no comment. Money is USD "
           "(DECIMAL), token counts are tokens, times are UTC.", ""]
    for table in tables():
        out += [f"## `{table.name}`", "", table.description, "", "| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{c}` | {kind} | {(comment or '').replace('|', '/')} |" for c, kind, comment in table.columns]
        out.append("")
    for name, description in views():
        out += [f"## `{name}` (view)", "", description, ""]
    return "\n".join(out) + "\n" + EXAMPLES


if __name__ == "__main__":
    print(render(), end="")
