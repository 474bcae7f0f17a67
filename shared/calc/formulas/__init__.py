"""The `formulas` calculation engine (the slower, second choice) and the Excel functions we
supply to it where it disagrees with Excel."""
