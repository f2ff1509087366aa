"""An Azure DevOps Repos pull request API stand-in (REST API 7.1), served over HTTP on
``127.0.0.1``.

It answers ``/{org}/{project}/_apis/git/repositories/{repo}/pullrequests`` and below, each
request naming ``api-version`` (else ``400 VssVersionNotSpecifiedException``): ``GET`` (with
``searchCriteria.status`` default ``active``, ``searchCriteria.sourceRefName``/
``targetRefName``, ``$top``/``$skip``; ``{"value": […], "count": n}``), ``POST`` (labels as
``[{"name"}]``), ``GET/PATCH …/pullrequests/{id}`` (title, description, ``status:
abandoned``), ``POST …/pullrequests/{id}/labels`` (``{"name"}``) and ``POST
…/pullrequests/{id}/threads`` (a comment thread). A personal access token is the password of
``Authorization: Basic`` (any user name). Errors are ``{"$id", "innerException", "message",
"typeName", "typeKey", "errorCode", "eventId"}``: 404 ``TF401019`` repository not found, 409
``TF401179`` an active pull request already exists, 400 for a description over 4000 characters or
a missing branch (``TF401398``); a refused token is a bare 401, a request without credentials
gets the sign-in page with ``203``; 429 with ``Retry-After`` and ``X-RateLimit-*`` headers.
"""

from __future__ import annotations

import base64
import binascii
import time
import uuid
from collections.abc import Mapping
from typing import Final

from aiohttp import web

from argocd_image_updater_testing.scm import JSON, _now
from argocd_image_updater_testing.scm_hosted import HostedFake, HostedPull, HostedRepo

MAX_DESCRIPTION: Final = 4000
_STATUS: Final = {"open": "active", "closed": "abandoned", "merged": "completed"}
_SIGN_IN: Final = "<html><head><title>Azure DevOps Services | Sign In</title></head></html>"


def _error(message: str, type_key: str, type_name: str = "") -> JSON:
    return {
        "$id": "1",
        "innerException": None,
        "message": message,
        "typeName": type_name
        or f"Microsoft.TeamFoundation.Git.Server.{type_key}, Microsoft.TeamFoundation.Git.Server",
        "typeKey": type_key,
        "errorCode": 0,
        "eventId": 3000,
    }


class AzureDevOpsFake(HostedFake):
    """Azure DevOps' pull request endpoints; repositories are ``org/project/repo``."""

    def api_url(self, path: str) -> str:
        """The repository API base of ``org/project/repo``."""
        org, project, name = path.split("/")
        return f"{self.url}/{org}/{project}/_apis/git/repositories/{name}"

    def error_body(self, status: int) -> JSON:
        known = {
            400: ("Bad request", "InvalidArgumentValueException"),
            403: (
                "TF401027: You need the Git 'Contribute to pull requests' permission to perform "
                "this action.",
                "GitNeedsPermissionException",
            ),
            404: ("The resource could not be found.", "NotFoundException"),
            409: ("Conflict", "ConflictException"),
            500: ("VS402987: An unexpected error occurred.", "UnexpectedException"),
        }
        message, key = known.get(status, ("Error", "VssServiceException"))
        return _error(message, key)

    def rate_limit_next(self, *, reset_in: int = 60) -> None:
        """Answer the next request like Azure DevOps' throttling: 429, ``Retry-After`` and the
        ``X-RateLimit-Resource/-Delay/-Limit/-Remaining/-Reset`` headers."""
        self.fail_next(
            429,
            _error(
                "TF400733: The request has been canceled: Request was blocked due to exceeding "
                "usage of resource 'Core' in namespace 'User'.",
                "RequestBlockedException",
            ),
            headers={
                "Retry-After": str(reset_in),
                "X-RateLimit-Resource": "Core",
                "X-RateLimit-Delay": "0.5",
                "X-RateLimit-Limit": "200",
                "X-RateLimit-Remaining": "0",
                "X-RateLimit-Reset": str(int(time.time()) + reset_in),
            },
        )

    # --- shapes --------------------------------------------------------------------------------

    @staticmethod
    def _id(text: str) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, text))

    def _repo_json(self, repo: HostedRepo, name: str | None = None) -> JSON:
        org, project, repo_name = repo.path.split("/")
        name = name or repo_name
        return {
            "id": self._id(f"{org}/{project}/{name}"),
            "name": name,
            "url": f"{self.url}/{org}/{project}/_apis/git/repositories/{name}",
            "project": {
                "id": self._id(f"{org}/{project}"),
                "name": project,
                "state": "wellFormed",
                "visibility": "private",
            },
        }

    def _pull_json(self, repo: HostedRepo, pull: HostedPull) -> JSON:
        data: dict[str, JSON] = {
            "repository": self._repo_json(repo),
            "pullRequestId": pull.number,
            "codeReviewId": pull.number,
            "status": _STATUS[pull.state],
            "createdBy": {"displayName": "Image Updater", "uniqueName": "image-updater"},
            "creationDate": pull.created_at,
            "closedDate": pull.closed_at,
            "title": pull.title,
            "description": pull.body,
            "sourceRefName": f"refs/heads/{pull.head}",
            "targetRefName": f"refs/heads/{pull.base}",
            "mergeStatus": "succeeded",
            "isDraft": False,
            "mergeId": self._id(f"{repo.path}/{pull.number}/merge"),
            "reviewers": [],
            "labels": [
                {"id": self._id(f"label/{name}"), "name": name, "active": True}
                for name in pull.labels
            ],
            "url": f"{self.api_url(repo.path)}/pullRequests/{pull.number}",
            "supportsIterations": True,
        }
        if pull.fork is not None:
            data["forkSource"] = {
                "name": f"refs/heads/{pull.head}",
                "repository": self._repo_json(repo, pull.fork.rsplit("/", 1)[-1]),
            }
        return data

    # --- routing -------------------------------------------------------------------------------

    def _token(self, request: web.Request) -> str | None:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            return base64.b64decode(value.strip()).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return ""

    async def _route(self, request: web.Request, segments: list[str], body: JSON) -> web.Response:
        token = self._token(request)
        if token is None:
            return web.Response(status=203, text=_SIGN_IN, content_type="text/html")
        if token not in self.tokens:
            return web.Response(
                status=401, headers={"WWW-Authenticate": 'Basic realm="https://dev.azure.com/"'}
            )
        if "api-version" not in request.query:
            return self._json(
                400,
                _error(
                    f'No api-version was supplied for the "{request.method}" request. The version '
                    'must be supplied either as part of the Accept header (e.g. "application/json; '
                    "api-version=1.0\") or as a query parameter (e.g. '?api-version=1.0').",
                    "VssVersionNotSpecifiedException",
                    "Microsoft.VisualStudio.Services.WebApi.VssVersionNotSpecifiedException, "
                    "Microsoft.VisualStudio.Services.WebApi",
                ),
            )
        if len(segments) < 7 or segments[2:5] != ["_apis", "git", "repositories"]:
            return self._json(404, self.error_body(404))
        repo = self.repo(f"{segments[0]}/{segments[1]}/{segments[5]}")
        if repo is None:
            return self._json(
                404,
                _error(
                    f"TF401019: The Git repository with name or identifier {segments[5]} does not "
                    "exist or you do not have permissions for the operation you are attempting.",
                    "GitRepositoryNotFoundException",
                ),
            )
        if segments[6].lower() != "pullrequests":
            return self._json(404, self.error_body(404))
        rest, method = segments[7:], request.method
        if not rest:
            if method == "GET":
                return self._list(request, repo)
            if method == "POST":
                return self._create(repo, body)
        elif rest[0].isdigit():
            pull = repo.pulls.get(int(rest[0]))
            if pull is None:
                return self._json(
                    404,
                    _error(
                        "TF401180: The requested pull request was not found.",
                        "GitPullRequestNotFoundException",
                    ),
                )
            tail = [s.lower() for s in rest[1:]]
            if tail == [] and method == "GET":
                return self._json(200, self._pull_json(repo, pull))
            if tail == [] and method == "PATCH":
                return self._update(repo, pull, body)
            if tail == ["labels"] and method == "POST":
                return self._label(pull, body)
            if tail == ["threads"] and method == "POST":
                return self._thread(pull, body)
        return self._json(404, self.error_body(404))

    def _list(self, request: web.Request, repo: HostedRepo) -> web.Response:
        status = request.query.get("searchCriteria.status", "active")
        source = request.query.get("searchCriteria.sourceRefName")
        target = request.query.get("searchCriteria.targetRefName")
        pulls = [
            p
            for p in repo.pulls.values()
            if (status == "all" or _STATUS[p.state] == status)
            and (source is None or f"refs/heads/{p.head}" == source)
            and (target is None or f"refs/heads/{p.base}" == target)
        ]
        pulls.sort(key=lambda p: p.number, reverse=True)
        try:
            top = int(request.query.get("$top", 101))
            skip = int(request.query.get("$skip", 0))
        except ValueError:
            return self._json(400, self.error_body(400))
        top, skip = max(1, min(top, self.page_size_cap)), max(0, skip)
        values = [self._pull_json(repo, p) for p in pulls[skip : skip + top]]
        return self._json(200, {"value": values, "count": len(values)})

    def _too_long(self, description: object) -> web.Response | None:
        if isinstance(description, str) and len(description) > MAX_DESCRIPTION:
            return self._json(
                400,
                _error(
                    "The pull request description is too long.",
                    "InvalidArgumentValueException",
                    "Microsoft.TeamFoundation.SourceControl.WebServer."
                    "InvalidArgumentValueException, Microsoft.TeamFoundation.SourceControl.WebServer",
                ),
            )
        return None

    def _create(self, repo: HostedRepo, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._json(400, self.error_body(400))
        refs = [body.get("sourceRefName"), body.get("targetRefName")]
        if not all(isinstance(r, str) and r.startswith("refs/heads/") for r in refs):
            return self._json(
                400,
                _error(
                    "TF401398: The pull request cannot be activated because the source and/or the "
                    "target branch no longer exists, or the requested refs are not branches",
                    "GitPullRequestCannotBeActivated",
                ),
            )
        head, base = (str(r).removeprefix("refs/heads/") for r in refs)
        if not body.get("title"):
            return self._json(
                400,
                _error(
                    "The title of the pull request is required.", "InvalidArgumentValueException"
                ),
            )
        refused = self._too_long(body.get("description"))
        if refused is not None:
            return refused
        if self.missing_branch(repo, head, base) is not None:
            return self._json(
                400,
                _error(
                    "TF401398: The pull request cannot be activated because the source and/or the "
                    "target branch no longer exists, or the requested refs are not branches",
                    "GitPullRequestCannotBeActivated",
                ),
            )
        if self.open_pull(repo, head, base) is not None:
            return self._json(
                409,
                _error(
                    "TF401179: An active pull request for the source and target branch already "
                    "exists.",
                    "GitPullRequestExistsException",
                ),
            )
        labels = [
            str(label["name"])
            for label in body.get("labels") or ()
            if isinstance(label, Mapping) and label.get("name")
        ]
        pull = self.add_pull(
            repo.path,
            head,
            base,
            str(body["title"]),
            body=str(body.get("description") or ""),
            labels=labels,
        )
        return self._json(201, self._pull_json(repo, pull))

    def _update(self, repo: HostedRepo, pull: HostedPull, body: JSON) -> web.Response:
        if not isinstance(body, Mapping):
            return self._json(400, self.error_body(400))
        refused = self._too_long(body.get("description"))
        if refused is not None:
            return refused
        status = body.get("status")
        if status is not None and status not in ("active", "abandoned", "completed"):
            return self._json(
                400, _error(f"Invalid status '{status}'.", "InvalidArgumentValueException")
            )
        if "title" in body:
            pull.title = str(body["title"] or "")
        if "description" in body:
            pull.body = str(body["description"] or "")
        if status == "abandoned" and pull.state == "open":
            pull.state, pull.closed_at = "closed", _now()
        elif status == "active" and pull.state == "closed":
            pull.state, pull.closed_at = "open", None
        pull.touch()
        return self._json(200, self._pull_json(repo, pull))

    def _label(self, pull: HostedPull, body: JSON) -> web.Response:
        name = body.get("name") if isinstance(body, Mapping) else None
        if not isinstance(name, str) or not name.strip():
            return self._json(
                400, _error("The tag name is required.", "InvalidArgumentValueException")
            )
        if name not in pull.labels:
            pull.labels.append(name)
        return self._json(
            200,
            {"id": self._id(f"label/{name}"), "name": name, "active": True, "url": ""},
        )

    def _thread(self, pull: HostedPull, body: JSON) -> web.Response:
        comments = body.get("comments") if isinstance(body, Mapping) else None
        if not isinstance(comments, list) or not comments:
            return self._json(
                400, _error("The thread has no comments.", "InvalidArgumentValueException")
            )
        texts = [str(c.get("content") or "") for c in comments if isinstance(c, Mapping)]
        pull.comments.extend(t for t in texts if t)
        now = _now()
        return self._json(
            200,
            {
                "id": pull.number * 1000 + len(pull.comments),
                "publishedDate": now,
                "lastUpdatedDate": now,
                "comments": [
                    {
                        "id": i + 1,
                        "parentCommentId": 0,
                        "author": {"displayName": "Image Updater"},
                        "content": text,
                        "publishedDate": now,
                        "commentType": "text",
                    }
                    for i, text in enumerate(texts)
                ],
                "status": body.get("status", "active") if isinstance(body, Mapping) else "active",
                "properties": {},
                "isDeleted": False,
            },
        )
