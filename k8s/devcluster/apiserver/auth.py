"""Authentication: static bearer tokens (kube-apiserver's --token-auth-file CSV), client certificates
signed by the client CA (user = CN, groups = O), and service-account tokens issued by TokenRequest."""

from __future__ import annotations

import csv
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import ApiError


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class IssuedToken:
    user: User
    namespace: str
    account: str
    account_uid: str
    expires: float


def read_token_file(path: str) -> dict[str, User]:
    """token,user,uid[,"group1,group2"] per line, as kube-apiserver reads it."""
    users: dict[str, User] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not row or row[0].startswith("#"):
                continue
            if len(row) < 3:
                raise ValueError(f"{path}:{number}: expected token,user,uid[,groups], got {len(row)} fields")
            groups = tuple(g.strip() for g in row[3].split(",") if g.strip()) if len(row) > 3 else ()
            users[row[0].strip()] = User(row[1].strip(), row[2].strip(), groups)
    return users


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    return User(f"system:serviceaccount:{namespace}:{name}", uid,
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"))


class Authenticator:
    """Finds the user of a request; `account_uid` tells whether a service account still exists."""

    def __init__(self, static_tokens: dict[str, User], account_uid: Callable[[str, str], str | None]):
        self.static_tokens = static_tokens
        self.account_uid = account_uid
        self.issued: dict[str, IssuedToken] = {}
        self.lock = threading.Lock()

    def issue(self, namespace: str, account: str, account_uid: str, seconds: int) -> tuple[str, float]:
        token = secrets.token_urlsafe(48)
        expires = time.time() + seconds
        with self.lock:
            self.issued[token] = IssuedToken(service_account_user(namespace, account, account_uid), namespace,
                                             account, account_uid, expires)
        return token, expires

    def from_token(self, token: str) -> User | None:
        user = self.static_tokens.get(token)
        if user is not None:
            return _authenticated(user)
        with self.lock:
            issued = self.issued.get(token)
        if issued is None or issued.expires < time.time():
            return None
        if self.account_uid(issued.namespace, issued.account) != issued.account_uid:
            return None        # the service account was deleted (and maybe re-created): its tokens die
        return issued.user

    @staticmethod
    def from_certificate(certificate: dict[str, Any] | None) -> User | None:
        """The user of a verified client certificate (ssl.getpeercert() form)."""
        if not certificate:
            return None
        name, groups = "", []
        for rdn in certificate.get("subject", ()):
            for attribute, value in rdn:
                if attribute == "commonName":
                    name = value
                elif attribute == "organizationName":
                    groups.append(value)
        return _authenticated(User(name, "", tuple(groups))) if name else None

    def authenticate(self, authorization: str | None, certificate: dict[str, Any] | None) -> User | None:
        """The user, or None when the request carries no credentials; a bad credential raises 401."""
        if authorization:
            scheme, _, token = authorization.partition(" ")
            user = self.from_token(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
            if user is None:
                raise unauthorized()
            return user
        return self.from_certificate(certificate)


def _authenticated(user: User) -> User:
    if "system:authenticated" in user.groups:
        return user
    return User(user.name, user.uid, user.groups + ("system:authenticated",))


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")
