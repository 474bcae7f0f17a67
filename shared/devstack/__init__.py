"""The one-machine stack behind ``sheetcalc dev``: moto for S3 and SQS, SQS pollers standing in
for Lambda event source mappings, and uvicorn serving the API.

Nothing here is used in Lambda; the pollers call the very handlers Lambda calls.
"""
