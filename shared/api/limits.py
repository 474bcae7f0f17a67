"""Refusing oversized requests before their body is read (Starlette would spool it to disk)."""

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from shared.config import get_settings

# Room for the multipart envelope and the other form fields around the workbook itself.
ENVELOPE_BYTES = 1024 * 1024


def install(app: FastAPI) -> None:
    """Answer 413 to any request whose declared length exceeds the upload limit."""

    @app.middleware("http")
    async def refuse_oversized(request: Request, call_next):
        declared = request.headers.get("content-length")
        limit = get_settings().max_upload_bytes
        if declared and declared.isdigit() and int(declared) > limit + ENVELOPE_BYTES:
            return JSONResponse({"detail": f"The request is larger than the {limit // (1024 * 1024)} MB limit"}, status_code=413)
        return await call_next(request)
