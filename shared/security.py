"""Secrets handling: password hashes, API keys, session tokens and field encryption.

Nothing secret is stored in clear: passwords as scrypt hashes, API keys and session tokens as
SHA-256 digests (they carry 122 bits of randomness, so a fast digest is safe and indexable),
storage credentials encrypted with AES-GCM under a key derived from the configured secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import uuid
from datetime import datetime, timedelta, timezone

import jwt
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from shared.config import get_settings
from shared.errors import Unauthorized

_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1


def hash_password(password: str) -> str:
    """A salted scrypt hash of ``password``."""
    salt = os.urandom(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32)
    return "scrypt${}${}${}${}${}".format(
        _SCRYPT_N, _SCRYPT_R, _SCRYPT_P, base64.b64encode(salt).decode(), base64.b64encode(digest).decode()
    )


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches the stored hash (constant time)."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        computed = hashlib.scrypt(
            password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=32
        )
        return hmac.compare_digest(computed, base64.b64decode(digest))
    except (ValueError, TypeError):
        return False


def new_temporary_password() -> str:
    """A random password to be changed at first login."""
    return secrets.token_urlsafe(12)


def digest(secret: str) -> str:
    """The SHA-256 hex digest under which keys and tokens are stored."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_api_key(tenant_slug: str) -> str:
    """A new key in the form ``{tenant_slug}_{uuid4}``."""
    return f"{tenant_slug}_{uuid.uuid4()}"


def mask_key(key: str) -> str:
    """The form in which a key is listed: tenant prefix and last four characters."""
    prefix, _, rest = key.rpartition("_")
    return f"{prefix}_****{rest[-4:]}"


def create_session_token(user_id: uuid.UUID, tenant_id: uuid.UUID) -> tuple[str, datetime]:
    """A signed JWT for a user session and its expiry."""
    settings = get_settings()
    # Whole seconds, so the announced expires_at is exactly the token's exp claim.
    now = datetime.now(timezone.utc).replace(microsecond=0)
    expires_at = now + timedelta(seconds=settings.jwt_ttl_seconds)
    claims = {
        "sub": str(user_id),
        "tid": str(tenant_id),
        "iat": int(now.timestamp()),
        "exp": int(expires_at.timestamp()),
        "jti": secrets.token_hex(8),
    }
    return jwt.encode(claims, settings.jwt_secret, algorithm="HS256"), expires_at


def decode_session_token(token: str) -> uuid.UUID:
    """The user id in a valid, unexpired token; Unauthorized otherwise."""
    try:
        claims = jwt.decode(token, get_settings().jwt_secret, algorithms=["HS256"], options={"require": ["exp", "sub"]})
        return uuid.UUID(claims["sub"])
    except (jwt.PyJWTError, ValueError, KeyError) as exc:
        raise Unauthorized("Invalid or expired token") from exc


def _aes_key() -> bytes:
    return hashlib.sha256(("sheetcalc-field-encryption:" + get_settings().encryption_key).encode()).digest()


def encrypt(plaintext: str) -> str:
    """AES-GCM encryption of a short secret, as ``v1:<base64 nonce+ciphertext>``."""
    nonce = os.urandom(12)
    sealed = AESGCM(_aes_key()).encrypt(nonce, plaintext.encode(), b"sheetcalc")
    return "v1:" + base64.b64encode(nonce + sealed).decode()


def decrypt(token: str) -> str:
    """The plaintext of ``encrypt``'s output."""
    raw = base64.b64decode(token.removeprefix("v1:"))
    return AESGCM(_aes_key()).decrypt(raw[:12], raw[12:], b"sheetcalc").decode()
