"""The daily cache report: one self-contained HTML file with charts and tables, from the warehouse.

Charts are Altair (Vega-Lite) specs; the page inlines ``vl-convert``'s bundle of the Vega, Vega-Lite
and Vega-Embed JavaScript (cached on disk, ``javascript_bundle``), so it opens with no network, and
vl-convert renders the same charts to PNG for Dagster's asset metadata. What the page shows (last ``days`` UTC days of data):

* token hit rate per day for the top apps (by prompt tokens);
* cost vs no-cache cost per day, savings shaded between them (USD);
* lost savings by cause (``lost_savings_usd`` of the incidents, by rule);
* the incidents (open first: since when, lost so far, cause; then resolved ones), and the costliest prefix families;
* what-if sections: routing policies compared, cache TTL switches that pay, KV memory per family.
"""

from __future__ import annotations

import html
import json
import os
import threading
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from pathlib import Path

import altair as alt
import duckdb
import pandas as pd
import vl_convert as vlc

from pipelines.lib import faults, options
from pipelines.lib.sql import params_for, statement

_preload: threading.Thread | None = None


def bundle_path() -> Path:
    """Where the JavaScript bundle is cached: ``$CACHEMETER_CACHE_DIR`` (default ``$XDG_CACHE_HOME/cachemeter``,
    else ``~/.cache/cachemeter``), one file per vl-convert version."""
    from pipelines.lib import disk_cache

    return disk_cache.root() / f"vega-bundle-vl-convert-{vlc.__version__}.js"


@cache
def javascript_bundle() -> str:
    """Vega-Embed, Vega-Lite and Vega as one offline script: ``vl_convert.javascript_bundle()``, cached on disk.

    vl-convert builds the bundle (about 0.9 MB) anew in every process, which costs about 2.6 s of CPU
    (measured); the same text is kept per vl-convert version in ``bundle_path()`` so later runs and
    ``cachemeter report`` read it instead. A cache that cannot be read or written is rebuilt or skipped.
    """
    path = bundle_path()
    try:
        text = path.read_text(encoding="utf-8")
        if "vegaEmbed" in text:
            return text
    except OSError:
        pass
    text = vlc.javascript_bundle()
    try:
        save(path, text)
    except OSError:
        pass  # e.g. a read-only home: the next process bundles again
    return text


def preload() -> None:
    """Load (or build) the report's JavaScript bundle in a background thread (once per process), so
    ``cachemeter run`` overlaps it with staging, which runs in DuckDB (vl-convert releases the GIL)."""
    global _preload
    if _preload is None:
        _preload = threading.Thread(target=javascript_bundle, name="report-preload", daemon=True)
        _preload.start()


# vl-convert's own page layout (vegalite_to_html with bundle=True), with the cached bundle inlined
PAGE = """<!DOCTYPE html>
<html>
  <head>
    <meta charset="UTF-8">
    <title>{title}</title>
    <script type="text/javascript">{bundle}</script>
  </head>
  <body>
    {header}<div id="vega-chart"></div>
    <script type="text/javascript">
      vegaEmbed('#vega-chart', {spec}, {{"renderer": "svg"}}).catch(console.error);
    </script>
    {tables}
  </body>
</html>
"""


CHART_TITLES = ("Token hit rate per day (top apps)", "Cost vs no-cache cost (savings shaded)", "Lost savings by cause")
# The report shows lost savings two ways, each against its own baseline (a reader saw three amounts for one
# incident and no reason): what each one measures, printed beside it
LOST_SAVINGS_NOTES = {
    "causes": ["The incidents' lost savings (the table below), by rule: a hit-rate rule's gap below the baseline",
               "frozen on the day it opened; negative_cache_roi's write premium above its read savings;",
               "below_cache_minimum's upper bound of what caching could save."],  # a chart's subtitle does not wrap
    "incidents": "Lost savings: the incident's gap below the baseline frozen on the day it opened, summed over its days "
                 "(the amount its notice reports).",
    "families": "below_own_trend_usd: each day's gap below the family's own trailing hit rate, where below it, "
                "summed over the days shown (not an incident's lost savings: no frozen baseline).",
}


@dataclass
class ReportData:
    """Frames behind the report (money as float for charting only; the warehouse keeps DECIMAL)."""

    daily: pd.DataFrame
    apps: pd.DataFrame
    causes: pd.DataFrame
    alerts: pd.DataFrame
    families: pd.DataFrame
    whatif: dict = field(default_factory=dict)  # what-if frames (pipelines/lib/whatif/report_sections.py)


DAYS = options.BY_NAME["report_days"].default  # UTC days of data shown unless asked (lib/options.py)


def load(conn: duckdb.DuckDBPyConnection, days: int = DAYS, top_apps: int = 6) -> ReportData:
    """Read the last ``days`` days of data from the warehouse (a read-only connection is enough).

    The queries are ``sql/report/*.sql``; each orders its rows completely (ties broken by the rows' own
    keys: day, app, rule, prefix family, provider, ...), so the same data always gives the same page.
    """
    params = {"days": int(days), "top_apps": int(top_apps)}

    def frame(name: str) -> pd.DataFrame:
        text = statement(f"report/{name}")
        return conn.execute(text, params_for(text, params)).df()

    return ReportData(daily=frame("daily_savings__days"), apps=frame("daily_savings__top_apps_hit_rate"),
                      causes=frame("cache_incidents__lost_by_cause"),
                      alerts=frame("cache_incidents__recent"),  # open first, then resolved ones of the window
                      families=frame("prefix_families__costliest"), whatif=_load_whatif(conn, days))


def _load_whatif(conn: duckdb.DuckDBPyConnection, days: int) -> dict:
    """The what-if sections' frames over the same last ``days`` days of data."""
    from pipelines.lib.whatif import report_sections

    last = conn.execute("select max(day) from marts.daily_savings").fetchall()[0][0]
    if last is None:
        return {}
    return report_sections.load(conn, last - timedelta(days=int(days) - 1), last + timedelta(days=1))


def _whatif_html(data: ReportData) -> str:
    from pipelines.lib.whatif import report_sections

    return report_sections.html(data.whatif, _table)


def charts(data: ReportData) -> list[alt.Chart]:
    """The three charts, each titled with one of ``CHART_TITLES``."""
    hit_rate = alt.Chart(data.apps, title=CHART_TITLES[0]).mark_line(point=True).encode(
        x=alt.X("day:T", title="day (UTC)"),
        y=alt.Y("token_hit_rate:Q", title="token hit rate", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("app:N", title="app"),
        tooltip=["day:T", "app:N", alt.Tooltip("token_hit_rate:Q", format=".1%")],
    ).properties(width=720, height=240)
    base = alt.Chart(data.daily).encode(x=alt.X("day:T", title="day (UTC)"))
    savings = base.mark_area(opacity=0.35, color="#2ca02c").encode(
        y=alt.Y("cost_usd:Q", title="USD per day"), y2="no_cache_cost_usd:Q",
        tooltip=["day:T", alt.Tooltip("savings_usd:Q", format="$,.2f", title="savings")])
    lines = base.transform_fold(["cost_usd", "no_cache_cost_usd"], as_=["series", "usd"]).mark_line().encode(
        y="usd:Q", color=alt.Color("series:N", title="", scale=alt.Scale(domain=["cost_usd", "no_cache_cost_usd"],
                                                                          range=["#1f77b4", "#d62728"])))
    cost = alt.layer(savings, lines, title=CHART_TITLES[1]).properties(width=720, height=240)
    lost = alt.Chart(data.causes, title=alt.TitleParams(CHART_TITLES[2], subtitle=LOST_SAVINGS_NOTES["causes"],
                                                         anchor="start")).mark_bar().encode(
        x=alt.X("lost_savings_usd:Q", title="lost savings (USD)"), y=alt.Y("cause:N", sort="-x", title=""),
        tooltip=["cause:N", alt.Tooltip("lost_savings_usd:Q", format="$,.2f"), "incidents:Q"],
    ).properties(width=720, height=max(60, 30 * len(data.causes)))
    return [hit_rate, cost, lost]


def _table(frame: pd.DataFrame, money: tuple = (), rates: tuple = ()) -> str:
    if frame.empty:
        return "<p>None.</p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, record):
            if column in money and pd.notna(value):
                # cents; four decimals below one cent, so a small amount does not read as $0.00
                text = f"${value:,.4f}" if 0 < abs(value) < 0.01 else f"${value:,.2f}"
            elif column in rates and pd.notna(value):
                text = f"{value:.1%}"
            else:
                text = "" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)
            cells.append(f"<td>{html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(data: ReportData, title: str = "cachemeter: daily cache report") -> str:
    """A self-contained HTML page (JavaScript inlined, data inlined in the specs)."""
    if _preload is not None:
        _preload.join()  # one bundling at a time
    spec = alt.vconcat(*charts(data)).resolve_scale(color="independent").to_dict()
    # "<" escaped so that no text in the data (an app name, say) can close the script element
    spec_json = json.dumps(spec).replace("<", "\\u003c")
    totals = data.daily[["cost_usd", "no_cache_cost_usd", "savings_usd"]].sum() if not data.daily.empty else None
    summary = ("<p>No data yet.</p>" if totals is None else
               f"<p>Last {len(data.daily)} day(s): paid <b>${totals.cost_usd:,.2f}</b>; without caching "
               f"<b>${totals.no_cache_cost_usd:,.2f}</b>; caching saved <b>${totals.savings_usd:,.2f}</b>.</p>")
    extra = (f"<h1>{html.escape(title)}</h1>{summary}"
             f"<style>body{{font-family:sans-serif;margin:24px}} table{{border-collapse:collapse;margin:8px 0 24px}}"
             f" td,th{{border:1px solid #ccc;padding:4px 8px;font-size:13px;text-align:left}}"
             f" p.note{{color:#555;font-size:13px;margin:0 0 4px}}</style>")
    tables = (f"<h2>Incidents (open first)</h2><p class=\"note\">{html.escape(LOST_SAVINGS_NOTES['incidents'])}</p>"
              f"{_table(data.alerts, money=('lost_savings_usd',))}"
              f"<h2>Costliest prefix families</h2><p class=\"note\">{html.escape(LOST_SAVINGS_NOTES['families'])}</p>"
              f"{_table(data.families, money=('cost_usd', 'savings_usd', 'below_own_trend_usd'), rates=('token_hit_rate',))}"
              f"{_whatif_html(data)}")
    return PAGE.format(title=html.escape(title), bundle=javascript_bundle(), header=extra, spec=spec_json, tables=tables)


def chart_pngs(data: ReportData) -> list[bytes]:
    """Each chart rendered to PNG (for Dagster metadata and the README)."""
    return [vlc.vegalite_to_png(chart.to_dict(), scale=1) for chart in charts(data)]


def write(conn: duckdb.DuckDBPyConnection, out: Path, days: int = DAYS) -> Path:
    """Write the report for the last ``days`` days to ``out`` (atomically, see ``save``); returns ``out``."""
    return save(out, render_html(load(conn, days)))


def save(out: Path, text: str) -> Path:
    """Replace ``out`` with ``text`` (UTF-8) atomically; returns ``out``. Creates the folder if missing.

    The text goes to a temporary file in the same folder, which then replaces ``out`` in one rename
    (as the warehouse snapshot is published): a reader, or a process killed mid-write, sees the old
    file or the new one, never half of one. The temporary file is removed when the write fails.
    Raises ``OSError`` (e.g. an unwritable folder) and ``UnicodeEncodeError``, leaving ``out`` untouched.
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with open(partial, "w", encoding="utf-8") as handle:
            half = len(text) // 2
            handle.write(text[:half])
            faults.maybe_die("report:mid_write")
            handle.write(text[half:])
        os.replace(partial, out)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return out
