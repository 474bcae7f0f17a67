"""Comparing two versions: named ranges added, removed and moved, formulas and constants changed
per sheet, schema differences, from the stored workbooks."""

from __future__ import annotations

import uuid

import pytest

from shared.db.session import session_scope
from shared.errors import Invalid, NotFound
from shared.services import version_diff, versions
from tests.replays.helpers import edited, rename, upload


def diff(deployed, version_id, against=None):
    with session_scope() as session:
        return version_diff.diff(session, tenant_id=uuid.UUID(deployed.admin.tenant_id), engine_id=uuid.UUID(deployed.engine_id),
                                 version_id=uuid.UUID(version_id), against_id=uuid.UUID(against) if against else None)


def crafted(book):
    sheet = book["Quote"]
    sheet["B10"] = "=monthly_payment*years*12+100"  # a formula edited
    sheet["B4"] = 0.05                               # a constant edited (the rate's default)
    sheet["A1"] = "Loan quote (2026)"                # a label edited
    sheet["H2"] = 7                                  # a constant added
    sheet["F3"] = "=principal*2"                     # a formula added
    rename(book, "years", "term_years")              # a name removed, another added
    sheet["C3"] = 250000                             # a constant added, where
    rename(book, "principal", "principal", "Quote!$C$3")  # a name moves
    notes = book.create_sheet("Notes")
    notes["A1"] = "added"


def test_the_diff_lists_what_changed_from_the_active_version(deployed, loan_xlsx):
    # GIVEN a version made from the active one with known edits
    candidate = upload(deployed, edited(loan_xlsx, crafted), "2.0")
    # WHEN it is compared with the active version (the default)
    d = diff(deployed, candidate)
    # THEN the names added, removed and moved are listed with what moved
    ranges = d["named_ranges"]
    assert [r["name"] for r in ranges["added"]] == ["term_years"]
    assert [r["name"] for r in ranges["removed"]] == ["years"]
    moved = {c["name"]: c for c in ranges["changed"]}
    assert list(moved) == ["principal"] and moved["principal"]["fields"] == ["ref"]
    assert (moved["principal"]["from"]["ref"], moved["principal"]["to"]["ref"]) == ("B3", "C3")
    # AND the cells: each formula and constant edit, in its sheet
    quote = next(s for s in d["cells"]["sheets"] if s["sheet"] == "Quote")
    formulas = {c["cell"]: c for c in quote["formula_cells"]}
    assert formulas["B10"] == {"cell": "B10", "from": "=monthly_payment*years*12", "to": "=monthly_payment*years*12+100"}
    assert formulas["F3"]["from"] is None and formulas["F3"]["to"] == "=principal*2"
    constants = {c["cell"]: c for c in quote["constant_cells"]}
    assert constants["B4"] == {"cell": "B4", "from": 0.045, "to": 0.05}
    assert constants["H2"] == {"cell": "H2", "from": None, "to": 7}
    assert constants["A1"]["to"] == "Loan quote (2026)"
    assert constants["C3"] == {"cell": "C3", "from": None, "to": 250000}
    assert (quote["formulas_changed"], quote["constants_changed"]) == (2, 4)
    # AND the new sheet, compared with nothing
    assert d["cells"]["sheets_added"] == ["Notes"] and d["cells"]["sheets_removed"] == []
    notes = next(s for s in d["cells"]["sheets"] if s["sheet"] == "Notes")
    assert notes["status"] == "added" and notes["constants_changed"] == 1
    assert d["cells"]["complete"] is True
    assert d["cells"]["formulas_changed"] == 2 and d["cells"]["constants_changed"] == 5


def test_the_other_direction_swaps_added_and_removed(deployed, loan_xlsx):
    candidate = upload(deployed, edited(loan_xlsx, crafted), "2.0")
    d = diff(deployed, deployed.version_id, against=candidate)
    assert [r["name"] for r in d["named_ranges"]["added"]] == ["years"]
    assert d["cells"]["sheets_removed"] == ["Notes"]


def test_schema_differences_are_listed_by_property_and_keyword(deployed, loan_xlsx):
    # GIVEN the same workbook twice, with different schemas
    candidate = upload(deployed, loan_xlsx, "2.0")
    tenant_id, engine_id = uuid.UUID(deployed.admin.tenant_id), uuid.UUID(deployed.engine_id)
    with session_scope() as session:
        for vid, schema in [
            (deployed.version_id, {"type": "object", "properties": {"principal": {"type": "number", "minimum": 0}, "years": {"type": "integer"}}, "required": ["principal"]}),
            (candidate, {"type": "object", "properties": {"principal": {"type": "number", "minimum": 1000}, "annual_rate": {"type": "number"}}, "required": ["principal", "annual_rate"]}),
        ]:
            versions.update_schemas(session, tenant_id=tenant_id, engine_id=engine_id, version_id=uuid.UUID(vid), input_schema=schema)
    # WHEN they are compared
    d = diff(deployed, candidate)
    # THEN the input schema's changes are named; the workbooks are the same bytes: no cell changed
    s = d["input_schema"]
    assert (s["added"], s["removed"]) == (["annual_rate"], ["years"])
    assert s["changed"] == [{"name": "principal", "keywords": ["minimum"], "from": {"type": "number", "minimum": 0},
                             "to": {"type": "number", "minimum": 1000}}]
    assert s["required_added"] == ["annual_rate"] and s["required_removed"] == []
    assert d["same_workbook"] is True and d["cells"]["formulas_changed"] == 0 == d["cells"]["constants_changed"]


def test_cell_lists_are_capped_and_the_counts_are_not(deployed, loan_xlsx, monkeypatch):
    monkeypatch.setattr(version_diff, "CELLS_SHOWN", 3)

    def many(book):
        for row in range(30, 40):
            book["Quote"][f"H{row}"] = row

    d = diff(deployed, upload(deployed, edited(loan_xlsx, many), "2.0"))
    quote = d["cells"]["sheets"][0]
    assert quote["constants_changed"] == 10 and len(quote["constant_cells"]) == 3


def test_an_unknown_version_or_another_tenants_is_not_found(deployed, client, loan_xlsx):
    from tests.factories import deploy_loan, make_admin

    other = deploy_loan(make_admin(client), loan_xlsx)
    with pytest.raises(NotFound):
        diff(deployed, deployed.version_id, against=other.version_id)
    with pytest.raises(NotFound):
        diff(deployed, other.version_id)


def test_without_an_active_version_the_other_must_be_named(admin, loan_xlsx):
    from tests.factories import deploy_loan

    inactive = deploy_loan(admin, loan_xlsx, activate=False)
    with pytest.raises(Invalid):
        diff(inactive, inactive.version_id)
