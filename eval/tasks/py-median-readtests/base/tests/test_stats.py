import unittest

from stats import median


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    # An even count has the mean of the two middle values as median.
    def test_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)
