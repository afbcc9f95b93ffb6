"""The report page's JavaScript bundle: built by vl-convert once, then read from the on-disk cache."""

import pandas as pd
import pytest
import vl_convert

from pipelines.lib import report


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CACHEMETER_CACHE_DIR", str(tmp_path / "cache"))
    report.javascript_bundle.cache_clear()
    yield tmp_path / "cache"
    report.javascript_bundle.cache_clear()


def test_the_bundle_is_vl_converts_and_is_read_back_from_disk(fresh_cache, monkeypatch):
    built = report.javascript_bundle()
    assert built == vl_convert.javascript_bundle() and "vegaEmbed" in built and len(built) > 500_000
    assert report.bundle_path() == fresh_cache / f"vega-bundle-vl-convert-{vl_convert.__version__}.js"
    assert report.bundle_path().read_text(encoding="utf-8") == built
    report.javascript_bundle.cache_clear()  # as a new process would
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda: pytest.fail("bundled again instead of read"))
    assert report.javascript_bundle() == built
    assert list(fresh_cache.iterdir()) == [report.bundle_path()]  # no partial file left behind


def test_a_damaged_or_unwritable_cache_is_rebuilt_not_trusted(fresh_cache, monkeypatch):
    fresh_cache.mkdir()
    report.bundle_path().write_text("half a bund", encoding="utf-8")
    monkeypatch.setattr(vl_convert, "javascript_bundle", lambda: "window.vegaEmbed = 1;")
    assert report.javascript_bundle() == "window.vegaEmbed = 1;"
    assert report.bundle_path().read_text(encoding="utf-8") == "window.vegaEmbed = 1;"
    report.javascript_bundle.cache_clear()
    monkeypatch.setenv("CACHEMETER_CACHE_DIR", "/proc/no-such-cache")  # cannot be created
    assert report.javascript_bundle() == "window.vegaEmbed = 1;"


def test_text_in_the_data_cannot_close_the_page_script(fresh_cache):
    hostile = "</script><script>alert(1)</script>"
    data = report.ReportData(
        daily=pd.DataFrame({"day": pd.to_datetime(["2026-11-01"]), "cost_usd": [1.0], "no_cache_cost_usd": [2.0],
                            "savings_usd": [1.0]}),
        apps=pd.DataFrame({"day": pd.to_datetime(["2026-11-01"]), "app": [hostile], "token_hit_rate": [0.5]}),
        causes=pd.DataFrame({"cause": ["hit_rate_drop"], "lost_savings_usd": [1.0], "alerts": [1]}),
        alerts=pd.DataFrame({"message": [hostile]}), families=pd.DataFrame())
    page = report.render_html(data)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the bundle and the embed call only
    assert "\\u003c/script>\\u003cscript>alert(1)" in page  # the app name, escaped inside the spec
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in page  # the alert message, escaped in the table


def test_a_report_write_that_fails_midway_leaves_the_previous_report_whole(tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    out.write_text("<html>yesterday's report</html>", encoding="utf-8")
    # the page cannot be encoded past its middle: the write fails after half of it is out
    monkeypatch.setattr(report, "load", lambda conn, days: None)
    monkeypatch.setattr(report, "render_html", lambda data: "<html>" + "x" * 200_000 + "\ud800</html>")
    with pytest.raises(UnicodeEncodeError):
        report.write(None, out)
    assert out.read_text(encoding="utf-8") == "<html>yesterday's report</html>"
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind
    monkeypatch.setattr(report, "render_html", lambda data: "<html>today</html>")
    assert report.write(None, out) == out and out.read_text(encoding="utf-8") == "<html>today</html>"
    assert list(tmp_path.iterdir()) == [out]
