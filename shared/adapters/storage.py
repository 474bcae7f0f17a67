"""Object storage for workbooks, prepared models and filled workbooks (S3)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from botocore.exceptions import ClientError

from shared.adapters.aws import client
from shared.config import get_settings
from shared.errors import NotFound, ServiceUnavailable

XLSX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


class ObjectStore:
    """Keys to bytes in one S3 bucket; S3 errors become NotFound or ServiceUnavailable."""

    def __init__(self, bucket: str):
        self.bucket = bucket

    @property
    def _s3(self):
        return client("s3")

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        """Store ``data`` under ``key`` (encrypted at rest)."""
        try:
            self._s3.put_object(
                Bucket=self.bucket, Key=key, Body=data, ContentType=content_type, ServerSideEncryption="AES256"
            )
        except ClientError as exc:
            raise ServiceUnavailable("Storage is not available") from exc

    def get(self, key: str) -> bytes:
        """The bytes under ``key``; NotFound when there are none."""
        try:
            return self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                raise NotFound("Stored file not found") from exc
            raise ServiceUnavailable("Storage is not available") from exc

    def exists(self, key: str) -> bool:
        """Whether an object is stored under ``key`` (a HEAD request)."""
        try:
            self._s3.head_object(Bucket=self.bucket, Key=key)
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
                return False
            raise ServiceUnavailable("Storage is not available") from exc

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under ``prefix``; returns how many."""
        deleted = 0
        try:
            paginator = self._s3.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                keys = [{"Key": obj["Key"]} for obj in page.get("Contents", [])]
                if keys:
                    self._s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
                    deleted += len(keys)
        except ClientError as exc:
            raise ServiceUnavailable("Storage is not available") from exc
        return deleted

    def presigned_get(self, key: str, filename: str, ttl_seconds: int) -> tuple[str, datetime]:
        """A pre-authenticated GET URL that downloads ``key`` as ``filename``, and its expiry."""
        expires_at = datetime.now(timezone.utc) + timedelta(seconds=ttl_seconds)
        url = self._s3.generate_presigned_url(
            "get_object",
            Params={
                "Bucket": self.bucket,
                "Key": key,
                "ResponseContentDisposition": f'attachment; filename="{filename}"',
                "ResponseContentType": XLSX_CONTENT_TYPE,
            },
            ExpiresIn=ttl_seconds,
        )
        return url, expires_at


def get_store() -> ObjectStore:
    """The configured object store."""
    return ObjectStore(get_settings().bucket)


def version_prefix(tenant_id, engine_id, version_id) -> str:
    """Where a version's files live."""
    return f"tenants/{tenant_id}/engines/{engine_id}/versions/{version_id}/"


def engine_prefix(tenant_id, engine_id) -> str:
    """Where all of an engine's version files live."""
    return f"tenants/{tenant_id}/engines/{engine_id}/"


def job_result_key(tenant_id, job_id) -> str:
    """Where a job's filled workbook lives: outside the engine's prefix, so it outlives the engine,
    and under ``results/``, which the bucket's lifecycle rule expires."""
    return f"results/{tenant_id}/{job_id}.xlsx"
