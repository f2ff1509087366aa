"""Real git servers on 127.0.0.1 for the demo and the tests.

* :func:`bare_repo` — a bare repository with an initial commit (also usable as ``file://``);
* :class:`GitHttpServer` — smart HTTP: ``git http-backend`` behind a small standard-library CGI
  bridge, with optional Basic auth and TLS, request counters by service, and requests of a service
  that can be held as if stalled in the network (:meth:`GitHttpServer.hold`);
* :class:`GitSshServer` — a private ``sshd`` whose only command is ``git-shell``, with its own
  host key, a generated client key and a known_hosts line.

Every repository made here carries a ``pre-receive`` hook that records push attempts and can be
told to reject the next N pushes (:func:`reject_next_pushes`), like a protected branch.
Every git or ssh process started here gets ``HOME=<private dir>``, ``GIT_CONFIG_NOSYSTEM=1`` and
``GIT_TERMINAL_PROMPT=0``.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import gzip
import hmac
import os
import pwd
import re
import select
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from argocd_image_updater_testing.process import ManagedProcess
from argocd_image_updater_testing.registry import TlsFiles
from argocd_image_updater_testing.serving import serve_in_thread, shut_down

GIT: Final = "git"
SSHD: Final = "/usr/sbin/sshd"
GIT_SHELL: Final = "/usr/bin/git-shell"
SANDBOX_AUTHOR: Final = {
    "GIT_AUTHOR_NAME": "Sandbox",
    "GIT_AUTHOR_EMAIL": "sandbox@example.com",
    "GIT_COMMITTER_NAME": "Sandbox",
    "GIT_COMMITTER_EMAIL": "sandbox@example.com",
}
ATTEMPTS_FILE: Final = "push-attempts"
REJECT_FILE: Final = "reject-pushes"
REJECT_MESSAGE_FILE: Final = "reject-message"

_PRE_RECEIVE: Final = f"""#!/bin/sh
# Records push attempts; rejects while {REJECT_FILE} holds a positive count.
echo attempt >> {ATTEMPTS_FILE}
n=$(cat {REJECT_FILE} 2>/dev/null || echo 0)
if [ "$n" -gt 0 ] 2>/dev/null; then
  echo $((n - 1)) > {REJECT_FILE}
  cat {REJECT_MESSAGE_FILE} >&2
  exit 1
fi
exit 0
"""


class GitServerError(RuntimeError):
    """A sandbox git server could not be started."""


# --- plain git helpers ------------------------------------------------------------------------


def git_env(home: Path | str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """An isolated environment for sandbox git processes."""
    env = {
        "PATH": os.environ.get("PATH") or "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        **SANDBOX_AUTHOR,
    }
    env.update(extra or {})
    return env


def git(
    *args: str,
    cwd: Path | str | None = None,
    home: Path | str,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
) -> str:
    """Run ``git *args`` synchronously with :func:`git_env`; stdout, or CalledProcessError."""
    proc = subprocess.run(
        [GIT, *args],
        cwd=cwd,
        env=git_env(home, env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, [GIT, *args], proc.stdout, proc.stderr)
    return proc.stdout


def _write_files(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def bare_repo(
    path: Path | str, *, branch: str = "main", files: Mapping[str, str] | None = None
) -> Path:
    """Create a bare repository at ``path`` whose ``branch`` (also its HEAD) has one commit with
    ``files`` (``{"dir/name.yaml": "text"}``); returns ``path``."""
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="bare-") as tmp:
        home = Path(tmp) / "home"
        work = Path(tmp) / "work"
        home.mkdir()
        work.mkdir()
        git("init", "-q", "--bare", f"--initial-branch={branch}", str(path), home=home)
        git("init", "-q", f"--initial-branch={branch}", cwd=work, home=home)
        _write_files(work, files or {})
        git("add", "-A", cwd=work, home=home)
        git("commit", "-q", "--allow-empty", "-m", "Initial commit", cwd=work, home=home)
        git("push", "-q", str(path), f"HEAD:refs/heads/{branch}", cwd=work, home=home)
    hook = path / "hooks" / "pre-receive"
    hook.write_text(_PRE_RECEIVE)
    hook.chmod(0o755)
    return path


def reject_next_pushes(repo: Path | str, count: int, message: str = "protected branch") -> None:
    """Make the ``pre-receive`` hook of ``repo`` (made by :func:`bare_repo`) reject the next
    ``count`` pushes with ``message``."""
    repo = Path(repo)
    (repo / REJECT_MESSAGE_FILE).write_text(message + "\n")
    (repo / REJECT_FILE).write_text(f"{count}\n")


def push_attempts(repo: Path | str) -> int:
    """How many pushes with ref updates reached ``repo``'s ``pre-receive`` hook."""
    try:
        return len((Path(repo) / ATTEMPTS_FILE).read_text().splitlines())
    except FileNotFoundError:
        return 0


def push_files(
    repo: Path | str,
    files: Mapping[str, str],
    *,
    home: Path | str,
    branch: str = "main",
    message: str = "Change from elsewhere",
) -> str:
    """Commit ``files`` on top of ``branch`` of the bare ``repo`` (via a throw-away clone) and
    push; returns the new commit."""
    with tempfile.TemporaryDirectory(prefix="pusher-") as tmp:
        work = Path(tmp)
        url = Path(repo).resolve().as_uri()
        git("clone", "-q", "--branch", branch, url, str(work), home=home)
        _write_files(work, files)
        git("add", "-A", cwd=work, home=home)
        git("commit", "-q", "--allow-empty", "-m", message, cwd=work, home=home)
        git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=work, home=home)
        return git("rev-parse", "HEAD", cwd=work, home=home).strip()


def revert_commit(
    repo: Path | str,
    commit: str,
    *,
    home: Path | str,
    branch: str = "main",
    author: tuple[str, str] = ("Sandbox", "sandbox@example.com"),
) -> str:
    """``git revert`` ``commit`` on top of ``branch`` of the bare ``repo`` as ``author`` (name,
    email) and push; returns the new commit."""
    env = {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1]}
    with tempfile.TemporaryDirectory(prefix="reverter-") as tmp:
        work = Path(tmp)
        url = Path(repo).resolve().as_uri()
        git("clone", "-q", "--branch", branch, url, str(work), home=home)
        git("revert", "--no-edit", commit, cwd=work, home=home, env=env)
        git("push", "-q", "origin", f"HEAD:refs/heads/{branch}", cwd=work, home=home)
        return git("rev-parse", "HEAD", cwd=work, home=home).strip()


def show(repo: Path | str, ref: str, path: str, *, home: Path | str) -> str | None:
    """The text of ``path`` at ``ref`` in ``repo``, or ``None`` when it does not exist."""
    try:
        return git("--git-dir", str(repo), "show", f"{ref}:{path}", home=home)
    except subprocess.CalledProcessError:
        return None


def log_subjects(repo: Path | str, ref: str = "HEAD", *, home: Path | str) -> list[str]:
    """Commit subjects reachable from ``ref``, newest first."""
    out = git("--git-dir", str(repo), "log", "--format=%s", ref, home=home)
    return out.splitlines()


def _plumbing(repo: Path | str, *args: str) -> str:
    """``git --git-dir <repo> *args`` with a throw-away HOME; stdout without the newline."""
    with tempfile.TemporaryDirectory(prefix="git-home-") as home:
        return git("--git-dir", str(repo), *args, home=home).strip()


def branch_commit(repo: Path | str, branch: str) -> str | None:
    """The commit of ``branch`` in the bare ``repo``, or ``None`` when there is no such branch."""
    try:
        return _plumbing(repo, "rev-parse", "-q", "--verify", f"refs/heads/{branch}^{{commit}}")
    except subprocess.CalledProcessError:
        return None


def commits_between(repo: Path | str, base: str, head: str) -> int:
    """How many commits ``head`` has that ``base`` has not (what a pull request would merge)."""
    return int(_plumbing(repo, "rev-list", "--count", f"refs/heads/{base}..refs/heads/{head}"))


def merge_branch(
    repo: Path | str, base: str, head: str, *, message: str, squash: bool = False
) -> str:
    """Merge ``head`` into ``base`` inside the bare ``repo`` as a hosting service's merge button
    does (no push, so no hook runs): a merge commit with both parents, or with ``squash`` one
    commit with the combined change on top of ``base``. Returns the new commit of ``base``."""
    tree = _plumbing(repo, "merge-tree", "--write-tree", f"refs/heads/{base}", f"refs/heads/{head}")
    parents = ["-p", f"refs/heads/{base}"] + ([] if squash else ["-p", f"refs/heads/{head}"])
    commit = _plumbing(repo, "commit-tree", tree.splitlines()[0], *parents, "-m", message)
    _plumbing(repo, "update-ref", f"refs/heads/{base}", commit)
    return commit


def delete_branch(repo: Path | str, branch: str) -> None:
    """Delete ``branch`` of the bare ``repo`` (like "Delete branch" after a merge)."""
    _plumbing(repo, "update-ref", "-d", f"refs/heads/{branch}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- smart HTTP -------------------------------------------------------------------------------


def _service_of(path: str, query: str) -> str | None:
    if path.endswith("/info/refs"):
        match = re.search(r"(?:^|&)service=git-([a-z-]+)", query)
        return match.group(1) if match else None
    for service in ("upload-pack", "receive-pack"):
        if path.endswith("/git-" + service):
            return service
    return None


def _v2_command(body: bytes) -> str | None:
    """The ``command=…`` of a protocol v2 request, ``fetch`` for a v0/v1 request."""
    try:
        length = int(body[:4], 16)
    except ValueError:
        return None
    first = body[4:length].decode("utf-8", "replace").strip()
    if first.startswith("command="):
        return first[len("command=") :]
    if first.startswith("want "):
        return "fetch"
    return None


def _client_gone(sock: socket.socket) -> bool:
    """Whether the client closed (or reset) its side of ``sock``, all it sent having been read."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall
    server: _BridgeServer

    def do_GET(self) -> None:
        self.server.owner._serve(self)

    def do_POST(self) -> None:
        self.server.owner._serve(self)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _BridgeServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: GitHttpServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # e.g. a client that refused our certificate


class GitHttpServer:
    """``git http-backend`` over HTTP(S) serving the bare repositories under ``root``.

    ``users`` enables Basic auth for every request (reads too); ``tls`` serves HTTPS.
    :attr:`requests` counts requests by service (``upload-pack``, ``receive-pack``), by
    service and protocol v2 command (``upload-pack:fetch``, ``upload-pack:ls-refs``) and, with
    ``users``, by service and user (``receive-pack@alice``).
    """

    def __init__(
        self,
        root: Path | str,
        *,
        users: Mapping[str, str] | None = None,
        tls: TlsFiles | None = None,
    ) -> None:
        self.root = Path(root)
        self.users: dict[str, str] = dict(users or {})
        self.tls = tls
        self.requests: collections.Counter[str] = collections.Counter()
        self.auth_failures = 0
        self.chunked_requests = 0
        self.held = 0
        """Requests waiting while their service is held (:meth:`hold`)."""
        self.dropped = 0
        """Held requests whose client went away before they were let go: never served."""
        self._gate: tuple[str, threading.Event] | None = None
        self._lock = threading.Lock()
        self._httpd: _BridgeServer | None = None
        self._thread: threading.Thread | None = None
        self._home: tempfile.TemporaryDirectory[str] | None = None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise GitServerError("the git HTTP server is not running: call start() first")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def url_for(self, repo_name: str) -> str:
        return f"{self.url}/{repo_name}"

    def start(self) -> GitHttpServer:
        if self._httpd is not None:
            return self
        self._home = tempfile.TemporaryDirectory(prefix="git-http-")
        httpd = _BridgeServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        if self.tls is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(self.tls.certificate, self.tls.key)
            # The handshake then runs in the request's thread, not in the accept loop.
            httpd.socket = context.wrap_socket(
                httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self._httpd = httpd
        self._thread = serve_in_thread(httpd, "git-http")
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        thread, self._thread = self._thread, None
        shut_down(httpd, thread)
        if self._home is not None:
            self._home.cleanup()
            self._home = None

    def __enter__(self) -> GitHttpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> GitHttpServer:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    # --- request handling ----------------------------------------------------------------------

    def hold(self, service: str = "receive-pack") -> None:
        """From now on, hold every POST of ``service`` (``receive-pack``: pushes, ``upload-pack``:
        fetches) before its request is read, as a stalled network would (:attr:`held` counts
        those waiting), until :meth:`release`. A held request whose client has gone away by then
        (its git process was killed) is dropped unserved (:attr:`dropped`), like bytes that
        never arrived: a dropped push is never applied."""
        with self._lock:
            if self._gate is None:
                self._gate = (service, threading.Event())

    def release(self) -> None:
        """Let the held requests go on, and stop holding new ones."""
        with self._lock:
            gate, self._gate = self._gate, None
        if gate is not None:
            gate[1].set()

    def _hold(self, service: str | None) -> bool:
        """Wait while requests of ``service`` are held; whether this one was held."""
        with self._lock:
            gate = self._gate if self._gate is not None and self._gate[0] == service else None
            if gate is not None:
                self.held += 1
        if gate is None:
            return False
        gate[1].wait(timeout=120)
        with self._lock:
            self.held -= 1
        return True

    def _drop(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.dropped += 1
        handler.close_connection = True

    def _authenticate(self, header: str | None) -> str | None:
        if not header or not header.lower().startswith("basic "):
            return None
        try:
            user, _, password = base64.b64decode(header[6:].strip()).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            return None
        return user

    def _read_body(self, handler: BaseHTTPRequestHandler) -> bytes:
        if "chunked" in (handler.headers.get("Transfer-Encoding") or "").lower():
            with self._lock:
                self.chunked_requests += 1
            chunks: list[bytes] = []
            while True:
                size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(handler.rfile.read(size))
                handler.rfile.readline()
        length = int(handler.headers.get("Content-Length") or 0)
        return handler.rfile.read(length) if length else b""

    def _count(self, service: str | None, body: bytes, encoding: str, user: str | None) -> None:
        if service is None:
            return
        command = None
        if body:
            try:
                raw = gzip.decompress(body) if encoding == "gzip" else body
                command = _v2_command(raw)
            except (OSError, EOFError):
                command = None
        with self._lock:
            self.requests[service] += 1
            if command:
                self.requests[f"{service}:{command}"] += 1
            if user is not None:
                self.requests[f"{service}@{user}"] += 1

    def _reply(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
    ) -> None:
        handler.send_response(status)
        for name, value in headers:
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(body)

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        path = unquote(parts.path)
        service = _service_of(path, parts.query)
        held = handler.command == "POST" and self._hold(service)
        try:
            body = self._read_body(handler) if handler.command == "POST" else b""
        except OSError:
            if not held:
                raise
            self._drop(handler)
            return
        if held and _client_gone(handler.connection):  # all it sent was read: EOF follows
            self._drop(handler)
            return
        user: str | None = None
        if self.users:
            user = self._authenticate(handler.headers.get("Authorization"))
            if user is None:
                with self._lock:
                    self.auth_failures += 1
                self._reply(
                    handler,
                    401,
                    [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Type", "text/plain")],
                    b"authentication required\n",
                )
                return
        encoding = handler.headers.get("Content-Encoding") or ""
        self._count(service, body, encoding, user)
        assert self._home is not None
        env = git_env(
            self._home.name,
            {
                "GIT_PROJECT_ROOT": str(self.root),
                "GIT_HTTP_EXPORT_ALL": "1",
                "REQUEST_METHOD": handler.command,
                "PATH_INFO": path,
                "QUERY_STRING": parts.query,
                "CONTENT_TYPE": handler.headers.get("Content-Type") or "",
                "CONTENT_LENGTH": str(len(body)),
                "REMOTE_ADDR": str(handler.client_address[0]),
                "GATEWAY_INTERFACE": "CGI/1.1",
                "SERVER_PROTOCOL": "HTTP/1.1",
            },
        )
        if encoding:
            env["HTTP_CONTENT_ENCODING"] = encoding
        if protocol := handler.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = protocol
        if user is not None:
            env["REMOTE_USER"] = user
        else:
            # Anonymous servers accept pushes too (http-backend needs this or REMOTE_USER).
            env.update(
                {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": "http.receivepack",
                    "GIT_CONFIG_VALUE_0": "true",
                }
            )
        proc = subprocess.run(
            [GIT, "http-backend"],
            input=body,
            capture_output=True,
            env=env,
            timeout=120,
            start_new_session=True,
        )
        head, sep, payload = proc.stdout.partition(b"\r\n\r\n")
        if not sep:
            head, sep, payload = proc.stdout.partition(b"\n\n")
        status = 200
        headers: list[tuple[str, str]] = []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name.strip(), value.strip()))
        if proc.returncode != 0 and not sep:
            status, headers, payload = 500, [("Content-Type", "text/plain")], proc.stderr
        self._reply(handler, status, headers, payload)


# --- SSH --------------------------------------------------------------------------------------


class GitSshServer(ManagedProcess):
    """A private ``sshd`` on 127.0.0.1 serving the bare repositories under ``root`` through
    ``git-shell``, for the current user with the generated client key only."""

    def __init__(self, root: Path | str, *, startup_timeout: float = 10.0) -> None:
        self.root = Path(root).resolve()
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self._timeout = startup_timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None
        self._port = 0
        self._host_public = ""
        self._client_private = ""

    @property
    def port(self) -> int:
        if not self._port:
            raise GitServerError("the SSH server is not running: call start() first")
        return self._port

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def known_hosts_line(self) -> str:
        """``[127.0.0.1]:PORT ssh-ed25519 AAAA…`` as in argocd-ssh-known-hosts-cm."""
        key_type, key = self._host_public.split()[:2]
        return f"[127.0.0.1]:{self.port} {key_type} {key}"

    @property
    def client_private_key(self) -> str:
        """The client private key (OpenSSH PEM text) authorised on this server."""
        return self._client_private

    def url_for(self, repo_name: str) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{self.root}/{repo_name}"

    def start(self) -> GitSshServer:
        if self._proc is not None:
            return self
        if not os.access(SSHD, os.X_OK) or not os.access(GIT_SHELL, os.X_OK):
            raise GitServerError(f"{SSHD} and {GIT_SHELL} are needed: install openssh-server")
        try:
            Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        except OSError as exc:
            raise GitServerError(f"sshd needs /run/sshd: {exc}") from exc
        self._dir = Path(tempfile.mkdtemp(prefix="git-sshd-"))
        try:
            self._prepare_keys(self._dir)
            for _ in range(5):
                if self._launch(self._dir, _free_port()):
                    return self
            raise GitServerError("sshd could not bind a free port")
        except BaseException:
            self.stop()
            raise

    def _prepare_keys(self, directory: Path) -> None:
        home = directory / "home"
        home.mkdir()
        keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", ""]
        env = git_env(home)
        for name in ("host_key", "client_key"):
            subprocess.run(
                [*keygen, "-f", str(directory / name)],
                check=True,
                capture_output=True,
                env=env,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
        self._host_public = (directory / "host_key.pub").read_text().strip()
        self._client_private = (directory / "client_key").read_text()
        client_public = (directory / "client_key.pub").read_text().strip()
        command = f'{GIT_SHELL} -c \\"$SSH_ORIGINAL_COMMAND\\"'
        (directory / "authorized_keys").write_text(
            f'restrict,command="{command}" {client_public}\n'
        )

    def _launch(self, directory: Path, port: int) -> bool:
        home = directory / "home"
        config = directory / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {directory / 'host_key'}",
                    f"AuthorizedKeysFile {directory / 'authorized_keys'}",
                    "PidFile none",
                    "UsePAM no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "StrictModes no",
                    "PermitRootLogin prohibit-password",
                    f"AllowUsers {self.user}",
                    "UseDNS no",
                    "MaxStartups 64",
                    "LogLevel INFO",
                    f"SetEnv HOME={home} GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0",
                ]
            )
            + "\n"
        )
        log_path = directory / "sshd.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=git_env(home),
                start_new_session=True,
            )
        self._proc = proc
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            text = log_path.read_text(errors="replace")
            if f"Server listening on 127.0.0.1 port {port}" in text:
                self._port = port
                return True
            if proc.poll() is not None:
                self._proc = None
                if "Address already in use" in text:
                    return False
                raise GitServerError(f"sshd exited with code {proc.returncode}:\n{text[-2000:]}")
            time.sleep(0.005)
        raise GitServerError(f"sshd did not start within {self._timeout} s")
