"""Every JSON arrow (`->`, `->>`) in the SQL files reads the JSON value its author meant.

DuckDB 1.5 parses the arrows at the precedence of the old lambda arrow, below AND, OR, NOT and `=`:
`a or j ->> '$' = 'x'` is `((a or j) ->> '$') = 'x'`, which casts the JSON j to BOOLEAN ("Conversion Error:
Failed to cast value to numerical") or reads the wrong value; DuckDB 2.0 parses it as `a or ((j ->> '$') = 'x')`.
An arrow whose left operand is a boolean, comparison or concatenation is such a misparse: write the arrow
in parentheses, `a or (j ->> '$') = 'x'`. The check parses each statement with the installed DuckDB.
"""

import json
import re

import duckdb
import pytest

from pipelines.lib.sql import sql_root

# the left operand of a misparsed arrow: what binds looser than the arrow in 1.5 but tighter in 2.0 (or `||`)
MISPARSED_LEFT = {"CONJUNCTION_AND", "CONJUNCTION_OR", "OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL",
                  "COMPARE_IN", "COMPARE_NOT_IN", "COMPARE_BETWEEN", "COMPARE_EQUAL", "COMPARE_NOTEQUAL",
                  "COMPARE_LESSTHAN", "COMPARE_GREATERTHAN", "COMPARE_LESSTHANOREQUALTO",
                  "COMPARE_GREATERTHANOREQUALTO", "COMPARE_DISTINCT_FROM", "COMPARE_NOT_DISTINCT_FROM"}
# what json_serialize_sql (SELECT only) cannot take: an insert's target, a table's or a scalar macro's head
HEAD = re.compile(r"^\s*(insert\s+into\s+[\w.]+(\s+by\s+name)?(\s*\([^)]*\))?|create\s+(or\s+replace\s+)?(temp\w*\s+)?table\s+[\w.]+\s+as"
                  r"|create\s+(or\s+replace\s+)?(temp\w*\s+)?macro\s+[\w.]+\s*\([^)]*\)\s+as(\s+table)?)", re.I)


def without_comments(text: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in text.splitlines())


def misparsed_arrows(select: str) -> list[str]:
    """The text after each arrow in ``select`` whose left operand is a boolean, comparison or `||` expression."""
    tree = json.loads(duckdb.connect().execute("select json_serialize_sql(?)", [select]).fetchone()[0])
    assert not tree.get("error"), tree.get("error_message")
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("class") == "FUNCTION" and node.get("function_name") in ("->", "->>"):
                args = node.get("children") or [a["expression"] for a in node.get("arguments", [])]
                if args[0].get("type") in MISPARSED_LEFT or args[0].get("function_name") == "||":
                    found.append(select[node["query_location"]:][:80])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(tree)
    return found


def files_with_arrows() -> list:
    return sorted(p for p in sql_root().rglob("*.sql") if "->" in without_comments(p.read_text(encoding="utf-8")))


def test_the_check_finds_a_misparsed_arrow_on_this_duckdb_and_none_in_parentheses():
    wrong = "select a is not null or j ->> '$' = 'x' from (select 1 a, '{}'::json j)"
    right = "select a is not null or (j ->> '$') = 'x' from (select 1 a, '{}'::json j)"
    assert misparsed_arrows(right) == []
    if duckdb.__version__.startswith("1."):
        assert misparsed_arrows(wrong) == ["->> '$' = 'x' from (select 1 a, '{}'::json j)"]


@pytest.mark.parametrize("path", files_with_arrows(), ids=lambda p: str(p.relative_to(sql_root())))
def test_sql_files_put_json_arrows_in_parentheses_where_duckdb_1_5_misparses_them(path):
    text = without_comments(path.read_text(encoding="utf-8")).strip().rstrip(";")
    select = HEAD.sub("", text, count=1)
    if not re.match(r"\s*(with|select|from|\()", select, re.I):
        select = f"select {select}"  # a scalar macro's body
    assert misparsed_arrows(select) == []
