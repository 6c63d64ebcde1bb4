import unittest

from matrix import Matrix


class MatrixTest(unittest.TestCase):
    def test_shape(self):
        self.assertEqual(Matrix([[1, 2, 3], [4, 5, 6]]).shape(), (2, 3))
