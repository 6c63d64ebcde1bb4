import hashlib
import subprocess
import yaml


def run(cmd):
    return subprocess.call(cmd, shell=True)


def load(text):
    return yaml.load(text)


def digest(data):
    return hashlib.md5(data).hexdigest()


password = "hunter2hunter2"
