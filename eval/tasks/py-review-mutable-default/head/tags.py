def normalise(tag):
    return tag.strip().lower()


def add_tag(tag, tags=[]):
    tags.append(normalise(tag))
    return tags


def count(tags):
    return len(tags)
