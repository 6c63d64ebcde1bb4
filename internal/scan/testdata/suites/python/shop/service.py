import hashlib
import hmac
import json
import logging
import random
import subprocess
import time

log = logging.getLogger(__name__)

RETRIES = 3


def git_revision():
    """The deployed revision, for the /version endpoint."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def backoff(attempt):
    # Jitter so that clients do not retry in lockstep.
    return min(30, 2 ** attempt) + random.uniform(0, 1)


def verify_webhook(secret, body, signature):
    expected = hmac.new(secret, body, hashlib.sha1).hexdigest()
    return hmac.compare_digest("sha1=" + expected, signature)


def cache_key(order):
    return hashlib.md5(json.dumps(order, sort_keys=True).encode()).hexdigest()


def load_orders(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        pass
    return []


def total(order):
    assert order["items"], "an order has items"
    return sum(i["price"] * i["quantity"] for i in order["items"])


def thumbnail(name):
    # The file name comes from the upload form.
    return subprocess.run(f"convert {name} -resize 64x64 thumb.png", shell=True, check=False)


def disk_usage():
    return subprocess.run("df -h /", shell=True, capture_output=True, text=True, check=False).stdout


def retry(fn):
    for attempt in range(RETRIES):
        try:
            return fn()
        except ConnectionError:
            log.warning("attempt %d failed", attempt)
            time.sleep(backoff(attempt))
    return fn()
