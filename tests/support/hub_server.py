"""A local stand-in for the Hugging Face hub: a real HTTP server on loopback serving one folder as a model repo.

It answers what huggingface_hub asks when it downloads (the same requests it sends to huggingface.co): the
model's info (`/api/models/ID`, `/api/models/ID/revision/REV`: its commit and files with their sizes), its
file tree (`/api/models/ID/tree/REV`) and
each file (`/ID/resolve/REV/FILE`, HEAD and GET, with the commit and ETag headers). Point huggingface_hub at it
through its endpoint setting; nothing in huggingface_hub or the network stack is replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import threading
import urllib.parse
from pathlib import Path

REVISION = "f" * 40


@contextlib.contextmanager
def hub_server(repo_id: str, folder: Path, delay: float = 0.0):
    """Serve `folder` as model `repo_id` at http://127.0.0.1:PORT; yields that URL. `delay`: seconds per 64 KB."""
    files = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}
    etags = {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in files.items()}
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet: the test reads `requests`
            pass

        def _info(self) -> bytes:
            return json.dumps({"id": repo_id, "modelId": repo_id, "sha": REVISION, "private": False,
                               "disabled": False, "gated": False, "tags": [], "downloads": 0, "likes": 0,
                               "siblings": [{"rfilename": n, "size": p.stat().st_size} for n, p in files.items()]
                               }).encode()

        def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False) -> None:
            self.send_response(status)
            for k, v in {"Content-Length": str(len(body)), **(headers or {})}.items():
                self.send_header(k, v)
            self.end_headers()
            if not head and body:
                import time

                for i in range(0, len(body), 1 << 16):
                    self.wfile.write(body[i:i + (1 << 16)])
                    if delay:
                        time.sleep(delay)

        def _route(self, head: bool) -> None:
            path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
            requests.append(f"{self.command} {path}")
            if path in (f"/api/models/{repo_id}", f"/api/models/{repo_id}/revision/main",
                        f"/api/models/{repo_id}/revision/{REVISION}"):
                return self._send(200, self._info(), {"Content-Type": "application/json"}, head)
            if path in (f"/api/models/{repo_id}/tree/main", f"/api/models/{repo_id}/tree/{REVISION}"):
                tree = [{"type": "file", "path": n, "size": p.stat().st_size, "oid": etags[n][:40]}
                        for n, p in files.items()]
                return self._send(200, json.dumps(tree).encode(), {"Content-Type": "application/json"}, head)
            for rev in ("main", REVISION):
                prefix = f"/{repo_id}/resolve/{rev}/"
                if path.startswith(prefix) and path[len(prefix):] in files:
                    name = path[len(prefix):]
                    body = files[name].read_bytes()
                    return self._send(200, body, {"X-Repo-Commit": REVISION, "ETag": f'"{etags[name]}"',
                                                  "Content-Type": "application/octet-stream"}, head)
            return self._send(404, b'{"error": "not found"}', {"Content-Type": "application/json",
                                                               "X-Error-Code": "EntryNotFound"}, head)

        def do_GET(self):
            self._route(head=False)

        def do_HEAD(self):
            self._route(head=True)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        server.requests = requests
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
