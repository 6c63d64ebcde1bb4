import pickle


def load(b):
    return pickle.loads(b)
