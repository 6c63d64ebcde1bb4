import unittest

from wrap import wrap


class WrapTest(unittest.TestCase):
    def test_short(self):
        self.assertEqual(wrap("a b", 10), ["a b"])

    def test_width(self):
        for width in (5, 7, 9):
            for line in wrap("the quick brown fox jumps over it", width):
                self.assertLessEqual(len(line), width)
        self.assertEqual(wrap("aaaa bbb", 7), ["aaaa", "bbb"])
