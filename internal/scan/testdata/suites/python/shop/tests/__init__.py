"""Tests of the order service."""
