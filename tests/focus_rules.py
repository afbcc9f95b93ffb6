"""The FinOps FOCUS 1.2 rules an exported dataset is checked against, written from the specification
(github.com/FinOps-Open-Cost-and-Usage-Spec/FOCUS_Spec, tag v1.2: specification/columns/*.md "Content
constraints" tables and requirement lists, specification/attributes/*.md). Independent of the exporter:
``violations(table)`` lists every broken rule of a PyArrow table, [] when the file conforms."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pyarrow as pa

# Column ID -> (feature level, allows nulls, data type), from each column's "Content constraints" table.
# Mandatory columns (every dataset) ...
MANDATORY = {
    "BilledCost": (False, "Decimal"), "BillingAccountId": (False, "String"), "BillingAccountName": (True, "String"),
    "BillingCurrency": (False, "String"), "BillingPeriodEnd": (False, "Date/Time"),
    "BillingPeriodStart": (False, "Date/Time"), "ChargeCategory": (False, "String"), "ChargeClass": (True, "String"),
    "ChargeDescription": (True, "String"), "ChargePeriodEnd": (False, "Date/Time"),
    "ChargePeriodStart": (False, "Date/Time"), "ContractedCost": (False, "Decimal"), "EffectiveCost": (False, "Decimal"),
    "InvoiceIssuerName": (False, "String"), "ListCost": (False, "Decimal"), "PricingQuantity": (True, "Decimal"),
    "PricingUnit": (True, "String"), "ProviderName": (False, "String"), "PublisherName": (False, "String"),
    "ServiceCategory": (False, "String"), "ServiceName": (False, "String"),
}
# ... and the conditional ones whose condition holds for metered LLM usage: the provider measures usage
# (ConsumedQuantity, ConsumedUnit), publishes unit prices exclusive of discounts (ListUnitPrice) and price
# lists (SkuId), and prices in more than one category (PricingCategory); users set tags (tenant, app).
CONDITIONAL = {
    "ConsumedQuantity": (True, "Decimal"), "ConsumedUnit": (True, "String"), "ListUnitPrice": (True, "Decimal"),
    "PricingCategory": (True, "String"), "SkuId": (True, "String"), "SkuPriceId": (True, "String"),
    "Tags": (True, "JSON"),
}
RECOMMENDED = {"ChargeFrequency": (False, "String"), "ServiceSubcategory": (False, "String")}
ALLOWED = {
    "ChargeCategory": {"Usage", "Purchase", "Tax", "Credit", "Adjustment"},
    "ChargeClass": {"Correction"},
    "ChargeFrequency": {"One-Time", "Recurring", "Usage-Based"},
    "PricingCategory": {"Standard", "Dynamic", "Committed", "Other"},
    "ServiceCategory": {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases",
                        "Developer Tools", "Multicloud", "Identity", "Integration", "Internet of Things",
                        "Management and Governance", "Media", "Migration", "Mobile", "Networking", "Security",
                        "Storage", "Web", "Other"},
}
# Numeric Format: integer, decimal or E notation, no sign on a positive value or exponent, no commas
NUMERIC = re.compile(r"^-?(\d+(\.\d+)?|\.\d+)(E-?\d+)?$")
# Date/Time Format: extended ISO 8601 in UTC, 'YYYY-MM-DDTHH:mm:ssZ'
DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
PASCAL_ALNUM = re.compile(r"^[A-Z][A-Za-z0-9]*$")


def _type_ok(kind: str, arrow_type: pa.DataType, text: bool) -> bool:
    if text:  # CSV: every cell is text; the value formats are checked instead
        return pa.types.is_string(arrow_type) or pa.types.is_null(arrow_type)
    return {"Decimal": pa.types.is_decimal(arrow_type) or pa.types.is_integer(arrow_type),
            "String": pa.types.is_string(arrow_type),
            "JSON": pa.types.is_string(arrow_type),
            "Date/Time": pa.types.is_timestamp(arrow_type) and getattr(arrow_type, "tz", None) in ("UTC", "+00:00"),
            }[kind]


def violations(table: pa.Table, text: bool = False) -> list[str]:
    """Broken FOCUS 1.2 rules in ``table`` (a Parquet file as read, or with ``text`` a CSV read as strings)."""
    out = []
    names = table.column_names
    specified = {**MANDATORY, **CONDITIONAL, **RECOMMENDED}
    for name in MANDATORY:
        if name not in names:
            out.append(f"{name}: MUST be present")
    for name in CONDITIONAL:
        if name not in names:
            out.append(f"{name}: MUST be present when its condition holds (it does for metered LLM usage)")
    custom = [n for n in names if n not in specified]
    for name in custom:
        if not name.startswith("x_"):
            out.append(f"{name}: a custom column MUST be prefixed x_")
    if custom and max(names.index(n) for n in names if n in specified) > min(names.index(n) for n in custom):
        out.append("custom columns SHOULD follow all FOCUS columns")
    for name in names:
        if name in specified and not PASCAL_ALNUM.match(name):
            out.append(f"{name}: Column IDs MUST be Pascal case, alphanumeric")
    rows = table.to_pylist()
    for name, (nullable, kind) in specified.items():
        if name not in names:
            continue
        if not _type_ok(kind, table.schema.field(name).type, text):
            out.append(f"{name}: MUST be of type {kind} (got {table.schema.field(name).type})")
        values = [r[name] for r in rows]
        if not nullable and any(v is None or v == "" for v in values):
            out.append(f"{name}: MUST NOT be null")
        present = [v for v in values if v not in (None, "")]
        if name in ALLOWED and any(v not in ALLOWED[name] for v in present):
            out.append(f"{name}: MUST be one of the allowed values (got {sorted(set(present) - ALLOWED[name])})")
        if text and kind == "Decimal" and any(not NUMERIC.match(v) for v in present):
            out.append(f"{name}: MUST conform to the Numeric Format")
        if text and kind == "Date/Time" and any(not DATETIME.match(v) for v in present):
            out.append(f"{name}: MUST conform to the Date/Time Format (YYYY-MM-DDTHH:mm:ssZ)")
    for number, row in enumerate(rows):
        out.extend(f"row {number}: {problem}" for problem in _row_violations(row, text))
    parents: dict[str, set] = {}
    for row in rows:
        if row.get("SkuPriceId"):
            parents.setdefault(row["SkuPriceId"], set()).add(row["SkuId"])
    out.extend(f"SkuPriceId {p} MUST have one and only one parent SkuId" for p, s in parents.items() if len(s) != 1)
    return out


def _num(value, text: bool):
    return None if value in (None, "") else (Decimal(value) if text else Decimal(value))


def _row_violations(row: dict, text: bool) -> list[str]:
    out = []
    if not re.fullmatch(r"[A-Z]{3}", row["BillingCurrency"] or ""):
        out.append("BillingCurrency MUST be a three-letter ISO 4217 code")
    if row["ChargePeriodEnd"] <= row["ChargePeriodStart"] or row["BillingPeriodEnd"] <= row["BillingPeriodStart"]:
        out.append("a period's exclusive end MUST follow its inclusive start")
    usage = row["ChargeCategory"] == "Usage" and row["ChargeClass"] != "Correction"
    quantity, unit_price = _num(row["PricingQuantity"], text), _num(row["ListUnitPrice"], text)
    if usage:
        for name in ("PricingQuantity", "ListUnitPrice", "SkuId", "SkuPriceId", "PricingCategory", "ConsumedQuantity"):
            if row[name] in (None, ""):
                out.append(f"{name} MUST NOT be null for a Usage charge")
    if (quantity is None) != (row["PricingUnit"] in (None, "")):
        out.append("PricingUnit MUST be null exactly when PricingQuantity is")
    if (row["ConsumedQuantity"] in (None, "")) != (row["ConsumedUnit"] in (None, "")):
        out.append("ConsumedUnit MUST be null exactly when ConsumedQuantity is")
    if unit_price is not None and unit_price < 0:
        out.append("ListUnitPrice MUST be non-negative")
    if unit_price is not None and quantity is not None and unit_price * quantity != _num(row["ListCost"], text):
        out.append(f"ListUnitPrice x PricingQuantity MUST match ListCost ({unit_price} x {quantity} != {row['ListCost']})")
    if row["Tags"] not in (None, ""):
        tags = json.loads(row["Tags"])
        if not isinstance(tags, dict) or any(isinstance(v, (dict, list)) for v in tags.values()):
            out.append("Tags MUST be a JSON object whose values are numbers, strings, true, false or null")
    return out
