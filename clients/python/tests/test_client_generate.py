"""`generate`: the engine's own schemas cut out of its contract (a real one, saved from
`sheetcalc dev` for the sample loan workbook) and turned into pydantic models."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from sheetcalc_client.generate import class_prefix, generate_models, models_document, module_name

CONTRACT = json.loads((Path(__file__).parent / "data" / "loan_contract.json").read_text())


def test_names_come_from_the_engine_slug():
    assert class_prefix("acme/loan-quote") == "LoanQuote" and module_name("acme/loan-quote") == "loan_quote_models"


def test_only_the_inputs_and_outputs_are_kept_renamed_with_their_refs():
    contract = {"components": {"schemas": {
        "Inputs": {"type": "object", "properties": {"when": {"$ref": "#/components/schemas/Inputs_day"}}},
        "Inputs_day": {"type": "string", "format": "date"},
        "Outputs": {"type": "object"}, "ExecuteRequest": {"type": "object"}, "Job": {"type": "object"},
    }}}
    schemas = models_document(contract, "Loan")["components"]["schemas"]
    assert set(schemas) == {"LoanInputs", "LoanInputs_day", "LoanOutputs"}
    assert schemas["LoanInputs"]["properties"]["when"] == {"$ref": "#/components/schemas/LoanInputs_day"}


def test_a_document_without_an_engines_schemas_is_refused():
    with pytest.raises(ValueError):
        models_document({"components": {"schemas": {"Job": {}}}}, "X")


def test_the_generated_models_read_the_engines_answers(tmp_path):
    pytest.importorskip("datamodel_code_generator")
    path = generate_models(CONTRACT, tmp_path / "loan_models.py", prefix="Loan")
    spec = importlib.util.spec_from_file_location("loan_models_unit", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    inputs = module.LoanInputs(principal=250000, start_date="2026-01-01")
    assert inputs.model_dump(mode="json", exclude_unset=True) == {"principal": 250000, "start_date": "2026-01-01"}
    outputs = module.LoanOutputs.model_validate({"monthly_payment": 1266.71, "end_date": "2055-12-01",
                                                 "schedule": [[1, 2, 3, 4]] * 12})
    assert outputs.end_date.year == 2055
    with pytest.raises(Exception):  # the contract says the schedule is 12 rows of 4
        module.LoanOutputs.model_validate({"schedule": [[1, 2, 3]]})
