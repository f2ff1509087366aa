"""AWS ECR: ``GetAuthorizationToken`` through botocore's default credential chain.

The chain covers environment keys, shared config/profiles, IRSA (web identity), EKS Pod Identity
and the instance role. ``ecr:<role-arn>`` first assumes that role through STS. Public ECR
(``public.ecr.aws``) uses ``ecr-public`` in us-east-1. botocore honours ``AWS_ENDPOINT_URL`` and
``AWS_ENDPOINT_URL_ECR`` / ``AWS_ENDPOINT_URL_STS`` (private endpoints, tests).

The SDK calls block, so they run in a worker thread.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from argocd_image_updater.config.cloud_options import CloudKind, CloudOptions
from argocd_image_updater.model.registry import Credentials
from argocd_image_updater.registry.cloud.errors import CloudLoginError, Failure, shorten
from argocd_image_updater.registry.cloud.hosts import ECR_PUBLIC_REGION, parse_ecr_host
from argocd_image_updater.registry.cloud.refresh import CloudToken
from argocd_image_updater.registry.cloud.sdk import require_sdk

ROLE_SESSION_NAME: Final = "argocd-image-updater"
_DENIED_CODES: Final = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnrecognizedClientException", "ExpiredToken",
     "ExpiredTokenException", "InvalidClientTokenId", "SignatureDoesNotMatch"}
)  # fmt: skip


def decode_authorization_token(token: str) -> Credentials:
    """ECR's ``authorizationToken`` (base64 of ``AWS:<password>``) → credentials."""
    try:
        text = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ValueError("the authorization token is not base64 of <user>:<password>") from None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        raise ValueError("the authorization token is not base64 of <user>:<password>")
    return Credentials(user, password)


def token_from_response(response: Mapping[str, Any], public: bool) -> CloudToken:
    """The token of a ``GetAuthorizationToken`` answer (a list for ECR, one object for public)."""
    data: Any = response.get("authorizationData")
    if not public and isinstance(data, list):
        data = data[0] if data else None
    if not isinstance(data, Mapping) or not isinstance(data.get("authorizationToken"), str):
        raise ValueError("the answer has no authorizationData.authorizationToken")
    credentials = decode_authorization_token(data["authorizationToken"])
    expires = data.get("expiresAt")
    expires_at = expires.timestamp() if isinstance(expires, datetime) else None
    return CloudToken(credentials, expires_at)


def resolve_region(options: CloudOptions, host: str, env: Mapping[str, str]) -> str:
    """The reference's region, else the host's, else ``AWS_REGION``/``AWS_DEFAULT_REGION``."""
    parsed = parse_ecr_host(host)
    if parsed is not None and parsed.public:
        return ECR_PUBLIC_REGION
    if options.region:
        return options.region
    if parsed is not None:
        return parsed.region
    return env.get("AWS_REGION", "") or env.get("AWS_DEFAULT_REGION", "")


class EcrLogin:
    """ECR logins for one region (and role); ``public`` for ``public.ecr.aws``."""

    kind: Final = CloudKind.ECR

    def __init__(self, options: CloudOptions, host: str) -> None:
        parsed = parse_ecr_host(host)
        self.public = parsed is not None and parsed.public
        self.region = resolve_region(options, host, os.environ)
        self.role_arn = options.role_arn

    @property
    def cache_key(self) -> tuple[str, ...]:
        return ("ecr-public" if self.public else "ecr", self.region, self.role_arn)

    def describe(self) -> str:
        parts = ["public ECR" if self.public else f"region {self.region or '(from AWS config)'}"]
        if self.role_arn:
            parts.append(f"role {self.role_arn}")
        return f"ecr ({', '.join(parts)})"

    async def fetch(self) -> CloudToken:
        require_sdk(CloudKind.ECR)
        return await asyncio.to_thread(self._fetch_blocking)

    def _fetch_blocking(self) -> CloudToken:
        import boto3
        import botocore.config
        import botocore.exceptions as bx

        config = botocore.config.Config(
            connect_timeout=5,
            read_timeout=10,
            retries={"mode": "standard", "total_max_attempts": 2},
            user_agent_extra="argocd-image-updater",
        )
        service = "ecr-public" if self.public else "ecr"
        call = "GetAuthorizationToken" if service == "ecr" else f"{service} GetAuthorizationToken"
        where = call
        try:
            session = boto3.session.Session(region_name=self.region or None)
            if self.role_arn:
                where = f"STS AssumeRole {self.role_arn}"
                sts = session.client("sts", config=config)
                assumed = sts.assume_role(RoleArn=self.role_arn, RoleSessionName=ROLE_SESSION_NAME)
                keys = assumed["Credentials"]
                session = boto3.session.Session(
                    aws_access_key_id=keys["AccessKeyId"],
                    aws_secret_access_key=keys["SecretAccessKey"],
                    aws_session_token=keys["SessionToken"],
                    region_name=session.region_name,
                )
                where = call
            client = session.client(service, config=config)
            response = client.get_authorization_token()
        except bx.NoRegionError:
            raise CloudLoginError(
                "ecr: no AWS region: it is not in the registry host name; write it in the "
                "reference (ecr:<region>) or set AWS_REGION",
                Failure.CONFIG,
            ) from None
        except (bx.NoCredentialsError, bx.PartialCredentialsError):
            raise CloudLoginError(
                "ecr: no AWS identity found: botocore's default chain (AWS_ACCESS_KEY_ID, "
                "shared config, IRSA web identity, EKS Pod Identity, instance role) gave no "
                "credentials",
                Failure.NO_IDENTITY,
            ) from None
        except (bx.EndpointConnectionError, bx.ConnectTimeoutError, bx.ReadTimeoutError) as exc:
            raise CloudLoginError(
                f"ecr: {where}: the AWS API could not be reached ({shorten(str(exc))})",
                Failure.UNREACHABLE,
            ) from None
        except bx.ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", "")) or "error"
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
            failure = Failure.DENIED if code in _DENIED_CODES else Failure.UNREACHABLE
            if failure is Failure.UNREACHABLE and isinstance(status, int) and 400 <= status < 500:
                failure = Failure.DENIED
            message = shorten(str(error.get("Message", "")))
            raise CloudLoginError(
                f"ecr: {where} failed: {code}"
                + (f": {message}" if message else "")
                + (f" (HTTP {status})" if isinstance(status, int) and status else "")
                + ("" if failure is Failure.UNREACHABLE else "; check the IAM permissions"),
                failure,
            ) from None
        except bx.BotoCoreError as exc:
            raise CloudLoginError(
                f"ecr: {where} failed: {type(exc).__name__}: {shorten(str(exc))}",
                Failure.NO_IDENTITY
                if isinstance(exc, bx.CredentialRetrievalError)
                else Failure.UNREACHABLE,
            ) from None
        try:
            return token_from_response(response, self.public)
        except ValueError as exc:
            raise CloudLoginError(f"ecr: {where}: {exc}", Failure.INVALID_RESPONSE) from None
