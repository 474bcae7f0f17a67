"""Pydantic models of one engine's inputs and outputs, generated from its OpenAPI contract
(``GET /jobs/openapi/{tenant}/{engine}``) by datamodel-code-generator (the ``[cli]`` extra)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_OWN = ("Inputs", "Outputs")
_REF = "#/components/schemas/"


def class_prefix(engine: str) -> str:
    """``acme/loan-quote`` -> ``LoanQuote``."""
    slug = engine.rpartition("/")[2]
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", slug) if part) or "Engine"


def module_name(engine: str) -> str:
    """``acme/loan-quote`` -> ``loan_quote_models``."""
    slug = re.sub(r"[^a-z0-9]+", "_", engine.rpartition("/")[2].lower()).strip("_") or "engine"
    return f"{slug}_models"


def models_document(contract: dict[str, Any], prefix: str) -> dict[str, Any]:
    """The contract cut to the engine's own schemas (``Inputs``, ``Outputs`` and their
    definitions ``Inputs_*``, ``Outputs_*``), renamed ``<prefix>Inputs`` and so on, refs followed."""
    schemas = contract.get("components", {}).get("schemas", {})
    own = {name: schema for name, schema in schemas.items() if name in _OWN or name.startswith(tuple(f"{n}_" for n in _OWN))}
    if not {"Inputs", "Outputs"} <= set(own):
        raise ValueError("the document is not an engine contract: it has no Inputs and Outputs schemas")
    renamed = {name: prefix + name for name in own}

    def moved(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str) and value.startswith(_REF):
                    target, _, rest = value[len(_REF):].partition("/")
                    value = _REF + renamed.get(target, target) + (f"/{rest}" if rest else "")
                out[key] = moved(value)
            return out
        if isinstance(node, list):
            return [moved(item) for item in node]
        return node

    return {
        "openapi": contract.get("openapi", "3.1.0"), "info": contract.get("info", {"title": prefix, "version": "0"}),
        "paths": {}, "components": {"schemas": {renamed[name]: moved(schema) for name, schema in own.items()}},
    }


def generate_models(contract: dict[str, Any], output: Path, *, prefix: str) -> Path:
    """Write the models module at ``output`` with datamodel-code-generator; returns ``output``."""
    try:
        import datamodel_code_generator  # noqa: F401
    except ImportError as exc:
        raise RuntimeError("generate needs datamodel-code-generator: pip install 'sheetcalc-client[cli]'") from exc
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "contract.json"
        source.write_text(json.dumps(models_document(contract, prefix)))
        command = [
            sys.executable, "-m", "datamodel_code_generator", "--input", str(source), "--input-file-type", "openapi",
            "--output", str(output), "--output-model-type", "pydantic_v2.BaseModel", "--target-python-version", "3.11",
            "--use-standard-collections", "--use-union-operator", "--disable-timestamp",
        ]
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"datamodel-code-generator failed ({done.returncode}): {done.stderr.strip()}")
    return output
