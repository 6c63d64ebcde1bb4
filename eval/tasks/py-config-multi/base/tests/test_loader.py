import unittest

from loader import parse


class LoaderTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(parse("a = 1\nb = true\n"), {"a": "1", "b": True})
