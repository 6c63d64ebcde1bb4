"""A small service with the mistakes the scanners exist for (Quavon demo corpus)."""
import hashlib
import pickle
import subprocess

import requests
import yaml


def run_report(name):
    # command injection: the shell sees user input
    return subprocess.call("report --name " + name, shell=True)


def load_session(blob):
    return pickle.loads(blob)


def load_settings(text):
    return yaml.load(text)


def fingerprint(password):
    return hashlib.md5(password.encode()).hexdigest()


def fetch(url):
    return requests.get(url, verify=False, timeout=5)


def debug_eval(expr):
    return eval(expr)
