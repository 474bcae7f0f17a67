"""Adapters own the vendor SDKs (S3, SQS) and translate their errors into ours."""
