"""Reading and writing the .xlsx package (OOXML) directly, without a calculation engine."""
