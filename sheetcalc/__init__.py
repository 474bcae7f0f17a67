"""sheetcalc as a library: an Excel workbook as a calculation engine in your own process.

    from sheetcalc import Engine

    engine = Engine.from_xlsx("loan-quote.xlsx")
    engine.calculate({"principal": 250000, "annual_rate": 0.045, "years": 30})

The answers are the service's: the same upload checks, engine choice, input rules, calculation
and output shaping (sheetcalc/engine.py says which functions). The guide's page "Run an engine in
your own process" has the rest.
"""

from shared import __version__
from shared.errors import (
    CalculationStopped,
    InputValidationError,
    Invalid,
    OutputsTooLarge,
    PayloadTooLarge,
    SheetcalcError,
    WorkbookError,
    WorkbookRefused,
)
from sheetcalc.engine import Engine

__all__ = [
    "CalculationStopped",
    "Engine",
    "InputValidationError",
    "Invalid",
    "OutputsTooLarge",
    "PayloadTooLarge",
    "SheetcalcError",
    "WorkbookError",
    "WorkbookRefused",
    "__version__",
]
