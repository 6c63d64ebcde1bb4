import unittest

from loader import parse


class LoaderTest(unittest.TestCase):
    def test_plain(self):
        self.assertEqual(parse("a = 1\nb = true\n"), {"a": "1", "b": True})

    def test_comments(self):
        self.assertEqual(parse("# a comment\nname = x\n  # indented\n"), {"name": "x"})

    def test_case(self):
        self.assertEqual(parse("debug = Yes\nquiet = OFF\n"), {"debug": True, "quiet": False})
