"""docs/tables.md is generated from the SQL column comments and cannot drift."""

from pipelines.lib import table_docs
from tests.conftest import REPO


def test_every_column_of_every_table_has_a_comment():
    assert table_docs.missing_comments() == []
    names = {t.name for t in table_docs.tables()}
    assert {"core.usage", "core.usage_costs", "marts.daily_savings", "marts.cache_alerts", "marts.prefix_families",
            "core.quarantine", "core.prices"} <= names


def test_docs_page_matches_the_sql():
    assert (REPO / "docs" / "tables.md").read_text() == table_docs.render(), \
        "regenerate with: python -m pipelines.lib.table_docs > docs/tables.md"
