def normalise(tag):
    return tag.strip()
