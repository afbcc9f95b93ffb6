"""Every supported source format: its example in fixtures/formats lands with hand-checked token classes and costs.

The expected values live beside the examples in ``fixtures/formats/expected.yaml`` (classes worked out from
each example's own fields, costs written as tokens x USD-per-million sums); one pipeline run loads the whole
folder, as a user pointing cachemeter at it would.
"""

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from pipelines.ingest import formats
from tests.conftest import REPO, query

FORMATS = REPO / "fixtures" / "formats"
EXPECTED = yaml.safe_load((FORMATS / "expected.yaml").read_text())


def cost_of(formula: str) -> Decimal:
    """``"256*0.2 + 1792*0.1"`` (tokens * USD per million tokens) -> USD, exactly."""
    total = Decimal(0)
    for term in formula.split("+"):
        tokens, price = term.strip().split("*")
        total += Decimal(tokens) * Decimal(price)
    return total / Decimal(1_000_000)


@pytest.fixture(scope="module")
def loaded(formats_warehouse):
    _, db = formats_warehouse
    rows = query(db, "select u.source_file, u.source_line, u.source_item, u.uncached_input_tokens, u.cache_read_tokens, "
                     "u.cache_write_5m_tokens, u.cache_write_1h_tokens, u.output_tokens, u.request_count, c.list_cost_usd, "
                     "c.priced, u.reported_cost_usd, c.cost_usd from core.usage u join core.usage_costs c using (request_id)")
    usage = {(r[0], f"{r[1]}.{r[2]}"): r[3:] for r in rows}
    quarantine = {(r[0], f"{r[1]}.{r[2]}"): r[3] for r in query(
        db, "select source_file, source_line, source_item, reason from core.quarantine")}
    files = {r[0]: r[1:] for r in query(db, "select source_file, rows_in, rows_accepted, rows_quarantined from stage.files")}
    return usage, quarantine, files


def test_every_example_file_has_expectations_and_every_expectation_a_file():
    examples = {p.relative_to(FORMATS).as_posix() for p in FORMATS.rglob("*")
                if p.is_file() and p.suffix in (".jsonl", ".json", ".sse", ".csv", ".parquet")}
    assert examples == set(EXPECTED)


@pytest.mark.parametrize("source_file", sorted(EXPECTED))
def test_format_example_lands_exactly(loaded, source_file):
    usage, quarantine, files = loaded
    expected = dict(EXPECTED[source_file])
    rejected = expected.pop("quarantined", {})
    got_items = {item for (f, item) in usage if f == source_file}
    assert got_items == set(expected), source_file
    for item, want in expected.items():
        row = usage[(source_file, item)]
        assert list(row[:5]) == want["classes"], (source_file, item)
        if "requests" in want:
            assert row[5] == want["requests"], (source_file, item)
        if want["cost"] is None:
            assert row[7] is False and row[6] is None, (source_file, item)
        else:
            assert row[7] is True and row[6] == cost_of(want["cost"]), (source_file, item, row[6], cost_of(want["cost"]))
        assert row[8] == (Decimal(want["reported"]) if "reported" in want else None), (source_file, item)
        # the cost is what was billed where the source reports it, else the list cost ("cost")
        assert row[9] == (row[8] if row[8] is not None else row[6]), (source_file, item)
    got_rejected = {item: reason for (f, item), reason in quarantine.items() if f == source_file}
    assert set(got_rejected) == set(rejected), (source_file, got_rejected)
    for item, fragment in rejected.items():
        assert fragment in got_rejected[item], (source_file, item, got_rejected[item])
    # rows in = accepted + quarantined, and they are exactly these items
    assert files[source_file] == (len(expected) + len(rejected), len(expected), len(rejected))


def test_formats_page_lists_every_example_folder():
    page = (REPO / "docs" / "formats.md").read_text()
    folders = {Path(f).parts[0] for f in EXPECTED}
    missing = [f for f in folders if f"fixtures/formats/{f}" not in page]
    assert not missing, f"docs/formats.md does not list {missing}"
    # and every declared format is described on the page
    adapters = set(formats.load().formats)
    assert len(adapters) > 20
    undocumented = [a for a in adapters if f"`{a}`" not in page]
    assert not undocumented, f"docs/formats.md does not describe {undocumented}"
