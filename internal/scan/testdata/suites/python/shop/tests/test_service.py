import hashlib
import hmac
import subprocess

import requests

from shop import service

PASSWORD = "correct-horse-battery"
GITHUB_TOKEN = "@TOKEN@"


def test_total():
    order = {"items": [{"price": 2, "quantity": 3}, {"price": 1, "quantity": 1}]}
    assert service.total(order) == 7


def test_backoff_grows():
    assert service.backoff(0) < service.backoff(4)


def test_webhook_signature():
    body = b'{"action": "opened"}'
    sig = "sha1=" + hmac.new(b"s3cr3t", body, hashlib.sha1).hexdigest()
    assert service.verify_webhook(b"s3cr3t", body, sig)


def test_cache_key_is_stable():
    assert service.cache_key({"a": 1}) == hashlib.md5(b'{"a": 1}').hexdigest()


def test_git_revision(monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout="abc\n"))
    assert service.git_revision() == "abc"


def test_login(client):
    resp = client.post("/login", data={"user": "alice", "password": PASSWORD})
    assert resp.status_code in (200, 404)


def test_staging_health():
    try:
        requests.get("https://staging.invalid/health", verify=False, timeout=1)
    except requests.RequestException:
        pass


def test_shell_helper(workdir):
    out = subprocess.run("ls -la", shell=True, cwd=workdir, capture_output=True)
    assert out.returncode == 0
