"""Excel's functions and how the service calculates each: the support table generated from the
engines, the correction layer and the conformance cases (shared/calc/fidelity/support.py), for
the console's Fidelity page. The same for every tenant; a management route like the others."""

from typing import Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from shared.calc.fidelity import support

router = APIRouter(tags=["functions"])

Status = Literal["supported", "supported with corrections", "not supported"]


class ConformanceCounts(BaseModel):
    cases: int = Field(description="Conformance cases of the function (values from Microsoft's documentation or Excel-saved files)")
    ironcalc: int = Field(description="Cases IronCalc alone answers as Excel")
    formulas: int = Field(description="Cases the formulas engine alone answers as Excel")
    service: int = Field(description="Cases the service (engine choice and correction layer) answers as Excel")
    known_gap: int = Field(description="Cases known to differ from Excel")


class FunctionSupport(BaseModel):
    function: str = Field(description="Excel's name, without the _xlfn. prefix")
    ironcalc: bool = Field(description="IronCalc implements it")
    formulas: bool = Field(description="The formulas engine implements it")
    layer: Literal["evaluated", "rewritten", "flagged"] | None = Field(
        description="What the correction layer does: evaluates it itself, rewrites formulas calling it at load, "
        "or flags cells calling it at upload; null for nothing"
    )
    status: Status
    conformance: ConformanceCounts | None = Field(description="How its conformance cases came out; null without cases")


class FunctionSupportResponse(BaseModel):
    """Every Excel function the table covers, in alphabetical order."""

    engines: dict[str, str] = Field(description="The engine versions the table was generated with")
    functions: list[FunctionSupport]


@router.get("/functions", response_model=FunctionSupportResponse)
def list_functions():
    """Excel's functions with their support by IronCalc, the formulas engine and the correction layer, and the status that follows."""
    table = support.load()
    return FunctionSupportResponse(engines=table["engines"], functions=table["functions"])
