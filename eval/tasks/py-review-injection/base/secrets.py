import os

TOKEN = os.environ["TOKEN"]
