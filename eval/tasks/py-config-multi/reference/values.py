def to_bool(value):
    """True or False for a boolean word, None for anything else."""
    value = value.lower()
    if value in ("true", "yes", "on"):
        return True
    if value in ("false", "no", "off"):
        return False
    return None
