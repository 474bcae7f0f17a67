"""``AdminClient``: the management API, signed in as a tenant's administrator. Thin wrappers:
each method is one endpoint and returns its JSON answer (see the service's /openapi.json)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from sheetcalc_client._core import Http, RetryPolicy, send
from sheetcalc_client._sync import SyncSession
from sheetcalc_client.operations import USER_AGENT

# Sent again after a lost answer: reading, and the writes whose repeat changes nothing more.
_REPEATABLE = ("GET", "PUT", "DELETE")
PERMISSIONS = ("can_execute", "can_view_jobs", "can_download", "can_view_about")
IMPORT_TYPES = {"csv": "text/csv", "jsonl": "application/x-ndjson"}


def _file(file: str | Path | bytes, name: str) -> tuple[str, bytes]:
    if isinstance(file, bytes):
        return name, file
    path = Path(file)
    return path.name, path.read_bytes()


class AdminClient(SyncSession):
    """A tenant administrator's session: ``AdminClient(url).login(email, password)``, or a token."""

    def __init__(
        self, base_url: str, token: str | None = None, *, timeout: float = 120.0, retry: RetryPolicy | None = None,
        sleep: Callable[[float], Any] | None = None, rng: random.Random | None = None,
        transport: httpx.BaseTransport | None = None, http: httpx.Client | None = None,
    ):
        self.token = token
        self.retry = retry or RetryPolicy()
        self.rng = rng or random.Random()
        super().__init__(base_url, timeout=timeout, sleep=sleep, transport=transport, http=http)

    def request(
        self, method: str, path: str, *, stream: bool = False, headers: dict[str, str] | None = None, **kwargs: Any,
    ) -> httpx.Response:
        """One management call (retried as the policy allows); an error answer raises the client's exception."""
        headers = {"User-Agent": USER_AGENT, **(headers or {})}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = Http(method, path, headers=headers, safe=method in _REPEATABLE, stream=stream, **kwargs)
        return self._runner.run(send(request, self.retry, self.rng))

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self.request(method, path, **kwargs)
        return response.json() if response.content else None

    # --- session ------------------------------------------------------------------------------

    def login(self, email: str, password: str) -> dict[str, Any]:
        """Sign in; the token is kept for the next calls. The answer says ``must_change_password``."""
        answer = self._json("POST", "/auth/login", json={"email": email, "password": password})
        self.token = answer["access_token"]
        return answer

    def change_password(self, current_password: str, new_password: str, *, email: str | None = None) -> None:
        """Change the password; the session ends, so with ``email`` it signs in again with the new one."""
        self._json("POST", "/auth/change-password", json={"current_password": current_password, "new_password": new_password})
        self.token = None
        if email:
            self.login(email, new_password)

    def logout(self) -> None:
        self._json("POST", "/auth/logout")
        self.token = None

    # --- engines and versions -----------------------------------------------------------------

    def engines(self) -> list[dict[str, Any]]:
        return self._json("GET", "/engines")

    def engine(self, engine_id: str) -> dict[str, Any]:
        return self._json("GET", f"/engines/{engine_id}")

    def create_engine(self, name: str, *, slug: str | None = None, description: str | None = None) -> dict[str, Any]:
        body = {"name": name, **({"slug": slug} if slug else {}), **({"description": description} if description else {})}
        return self._json("POST", "/engines", json=body)

    def update_engine(self, engine_id: str, **fields: Any) -> dict[str, Any]:
        return self._json("PATCH", f"/engines/{engine_id}", json=fields)

    def delete_engine(self, engine_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/engines/{engine_id}")

    def upload_version(self, engine_id: str, version: str, workbook: str | Path | bytes) -> dict[str, Any]:
        """Upload a workbook as a new version; the answer carries its ``test_api_key`` (shown once)."""
        return self._json("POST", f"/engines/{engine_id}/versions", data={"version": version},
                          files={"file": _file(workbook, "workbook.xlsx")})

    def update_version(self, engine_id: str, version_id: str, **fields: Any) -> dict[str, Any]:
        """Set a version's ``input_schema`` / ``output_schema``."""
        return self._json("PATCH", f"/engines/{engine_id}/versions/{version_id}", json=fields)

    def delete_version(self, engine_id: str, version_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/engines/{engine_id}/versions/{version_id}")

    def activate_version(self, engine_id: str, version_id: str, *, override_reason: str | None = None) -> dict[str, Any]:
        """Make the version the active one; ``override_reason`` activates despite failing test cases."""
        body = {"override_reason": override_reason} if override_reason is not None else None
        return self._json("POST", f"/engines/{engine_id}/versions/{version_id}/activate", json=body)

    def contract(self, engine_id: str) -> dict[str, Any]:
        """The engine's OpenAPI contract, as its consumers see it."""
        return self._json("GET", f"/engines/{engine_id}/openapi")

    def jobs(self, engine_id: str, *, status: str | None = None, limit: int = 50, offset: int = 0) -> dict[str, Any]:
        params = {"limit": limit, "offset": offset, **({"status": status} if status else {})}
        return self._json("GET", f"/engines/{engine_id}/jobs", params=params)

    # --- test cases and releases --------------------------------------------------------------

    def test_cases(self, engine_id: str) -> list[dict[str, Any]]:
        return self._json("GET", f"/engines/{engine_id}/test-cases")

    def create_test_case(
        self, engine_id: str, *, expected: dict[str, Any], inputs: dict[str, Any] | None = None, name: str | None = None,
        tolerances: dict[str, dict[str, float]] | None = None, enabled: bool = True,
    ) -> dict[str, Any]:
        """A test case: ``inputs``, the outputs they must give, a tolerance per output (``{"absolute": x, "relative": y}``)."""
        body = {"inputs": inputs or {}, "expected": expected, "enabled": enabled,
                **({"name": name} if name else {}), **({"tolerances": tolerances} if tolerances is not None else {})}
        return self._json("POST", f"/engines/{engine_id}/test-cases", json=body)

    def update_test_case(self, engine_id: str, case_id: str, **fields: Any) -> dict[str, Any]:
        return self._json("PATCH", f"/engines/{engine_id}/test-cases/{case_id}", json=fields)

    def delete_test_case(self, engine_id: str, case_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/engines/{engine_id}/test-cases/{case_id}")

    def import_test_cases(self, engine_id: str, source: str | Path | bytes, *, kind: str | None = None) -> dict[str, Any]:
        """Add test cases in bulk (all or none): a ``.csv`` or ``.jsonl`` file, or its bytes with
        ``kind`` ``"csv"`` or ``"jsonl"``."""
        path = f"/engines/{engine_id}/test-cases/import"
        if isinstance(source, bytes):
            if kind not in IMPORT_TYPES:
                raise ValueError(f"give kind= one of {sorted(IMPORT_TYPES)} with bytes")
            return self._json("POST", path, content=source, headers={"Content-Type": IMPORT_TYPES[kind]})
        return self._json("POST", path, files={"file": _file(source, "cases")})

    def test_case_from_job(self, engine_id: str, job_id: str, *, name: str | None = None,
                           tolerances: dict[str, dict[str, float]] | None = None) -> dict[str, Any]:
        """A test case from a completed job: its inputs, and its outputs as the expected ones."""
        body = {**({"name": name} if name else {}), **({"tolerances": tolerances} if tolerances is not None else {})}
        return self._json("POST", f"/engines/{engine_id}/test-cases/from-job/{job_id}", json=body or None)

    def run_tests(self, engine_id: str, version_id: str) -> dict[str, Any]:
        """Run the enabled test cases on a version, in the background (poll ``latest_test_run``)."""
        return self._json("POST", f"/engines/{engine_id}/versions/{version_id}/test-runs")

    def latest_test_run(self, engine_id: str, version_id: str) -> dict[str, Any]:
        return self._json("GET", f"/engines/{engine_id}/versions/{version_id}/test-runs/latest")

    def gate(self, engine_id: str, version_id: str) -> dict[str, Any]:
        """Whether activating the version needs an override, and why."""
        return self._json("GET", f"/engines/{engine_id}/versions/{version_id}/gate")

    def releases(self, engine_id: str, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
        """The engine's activations, newest first."""
        return self._json("GET", f"/engines/{engine_id}/releases", params={"limit": limit, "offset": offset})

    # --- export and import --------------------------------------------------------------------

    def export_engine(self, engine_id: str, path: str | Path) -> Path:
        """Save the engine (versions, schemas, test cases) as a zip at ``path``."""
        response = self.request("GET", f"/engines/{engine_id}/export", stream=True)
        target = Path(path)
        try:
            with target.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
        finally:
            response.close()
        return target

    def import_engine(self, archive: str | Path | bytes, *, slug: str | None = None, name: str | None = None) -> dict[str, Any]:
        """A new engine from an export archive (its versions, schemas and test cases); ``slug`` and
        ``name`` replace the archive's. The answer lists the versions with their new test keys."""
        form = {**({"slug": slug} if slug else {}), **({"name": name} if name else {})}
        return self._json("POST", "/engines/import", files={"file": _file(archive, "engine.zip")}, data=form or None)

    # --- consumers and access -----------------------------------------------------------------

    def consumers(self) -> list[dict[str, Any]]:
        return self._json("GET", "/consumers")

    def create_consumer(self, name: str) -> dict[str, Any]:
        """A new consumer; its ``api_key`` is in this answer only."""
        return self._json("POST", "/consumers", json={"name": name})

    def update_consumer(self, consumer_id: str, *, is_active: bool) -> dict[str, Any]:
        return self._json("PATCH", f"/consumers/{consumer_id}", json={"is_active": is_active})

    def delete_consumer(self, consumer_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/consumers/{consumer_id}")

    def grant(self, engine_id: str, consumer_id: str, **permissions: bool) -> dict[str, Any]:
        """Set a consumer's permissions on an engine; those not given are granted (all four by default)."""
        unknown = set(permissions) - set(PERMISSIONS)
        if unknown:
            raise ValueError(f"unknown permissions {sorted(unknown)}; they are {PERMISSIONS}")
        return self._json("PUT", f"/engines/{engine_id}/access/{consumer_id}", json={p: permissions.get(p, True) for p in PERMISSIONS})

    def revoke(self, engine_id: str, consumer_id: str) -> dict[str, Any]:
        return self._json("DELETE", f"/engines/{engine_id}/access/{consumer_id}")

    # --- webhooks -----------------------------------------------------------------------------

    def webhook_signing_secret(self) -> dict[str, Any]:
        """The tenant's signing secret: ``secret`` is shown on the first read only (then null)."""
        return self._json("GET", "/tenant/webhook-signing-secret")

    def rotate_webhook_signing_secret(self) -> dict[str, Any]:
        return self._json("POST", "/tenant/webhook-signing-secret/rotate")
