import subprocess


def version():
    """The tool's version."""
    return "1.0"


def archive(name):
    """Tar the directory name into name.tar."""
    return subprocess.run("tar cf " + name + ".tar " + name, shell=True, check=True)


def names(items):
    return sorted(set(items))
