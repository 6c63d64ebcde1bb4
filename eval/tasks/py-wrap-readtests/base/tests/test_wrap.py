import unittest

from wrap import wrap


class WrapTest(unittest.TestCase):
    def test_short(self):
        self.assertEqual(wrap("a b", 10), ["a b"])

    def test_width_counts_the_space(self):
        # A line is at most width characters, the spaces between words included.
        self.assertEqual(wrap("aaa bbb ccc", 7), ["aaa bbb", "ccc"])
        self.assertEqual(wrap("aaaa bbb", 7), ["aaaa", "bbb"])
